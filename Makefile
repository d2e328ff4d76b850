# CaptureShield. `make demo` runs the main job; `make test` runs every test.
SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=
CONFIG ?= debug

.PHONY: all build release deps test test-unit test-one lint format demo bench clean fuzz sanitize
.PHONY: xorg-module xorg-test xorg-test-one xorg-bench xorg-fuzz

all: build

deps:
	@scripts/install-deps.sh test

build:
	@scripts/install-deps.sh build
	$(SWIFT) build

## Release builds link the Swift runtime and Foundation statically: the installed binary
## needs no Swift toolchain on the desktop, and the daemon maps ~5 MB less.
RELEASE_BUILD = $(SWIFT) build -c release --static-swift-stdlib

release:
	@scripts/install-deps.sh build
	$(RELEASE_BUILD)

## The whole test suite: installs what it needs, checks formatting, builds with no
## warnings, runs unit and integration tests (integration tests start their own Xvfb),
## then the unit tests under AddressSanitizer and ThreadSanitizer and each fuzzer for a
## bounded time (FUZZ_SECONDS, 30 here).
test:
	@scripts/install-deps.sh test
	@scripts/safe-build-dir.sh
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests
	@scripts/build-no-warnings.sh
	@# the install test's release build, done now so it does not load the machine mid-run
	$(RELEASE_BUILD) --scratch-path .build/install-test
	$(SWIFT) test --filter CaptureShieldTests
	@$(MAKE) xorg-test
	@# integration tests one at a time: each starts its own Xvfb, daemon and capture tools,
	@# and detection timing is what they check, so they must not starve each other. They
	@# drive the release binary, the one users install (a debug build reacts several times
	@# slower, which is what quarantine races against)
	SHIELDCTL_PATH=$(CURDIR)/.build/install-test/release/shieldctl \
	  $(SWIFT) test --skip-build --no-parallel --filter IntegrationTests
	@scripts/sanitize.sh
	@FUZZ_SECONDS=$${FUZZ_SECONDS:-30} scripts/fuzz.sh

## The unit tests alone (Tests/CaptureShieldTests: no X, no Xvfb, in parallel): the
## command to run after every change. Times in HACKING.md, "Running tests".
test-unit:
	@scripts/install-deps.sh build
	$(SWIFT) test --filter CaptureShieldTests

## One suite or test, run as `make test` runs it: TEST is a `swift test --filter` pattern
## (DetectorTests, IntegrationTests.CaptureTests, EngineTests). Integration tests drive the
## release binary (built into .build/install-test, as `make test` does), one at a time.
test-one:
	@test -n "$(TEST)" || { echo "usage: make test-one TEST=<suite or test>, e.g. TEST=DetectorTests" >&2; exit 64; }
	@scripts/install-deps.sh test
	@scripts/safe-build-dir.sh
	$(RELEASE_BUILD) --scratch-path .build/install-test
	$(SWIFT) build --build-tests
	SHIELDCTL_PATH=$(CURDIR)/.build/install-test/release/shieldctl \
	  $(SWIFT) test --skip-build --no-parallel --filter '$(TEST)'

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

## The main job: on a desktop, protects it; without one, a self-contained demo on a
## private Xvfb that writes screenshots and a report to ./demo-out.
demo:
	@scripts/install-deps.sh demo
	@scripts/safe-build-dir.sh
	$(RELEASE_BUILD)
	@# server enforcement too where a headless Xorg can run (the demo says so when it cannot)
	@scripts/install-deps.sh xorg && $(MAKE) xorg-module || echo "demo: no Xorg module (its part will be skipped)"
	@scripts/demo.sh

## The benchmarks (docs/performance.md): shieldbench's rows 1-11, accessibility's cost to apps
## (scripts/bench-accessibility.sh), then the module's own
## (x11perf, instruction counts). Exits non-zero when a row fails (did not run, or its check
## failed); a target a row misses is printed as NO beside its figure.
bench:
	@scripts/install-deps.sh bench
	@scripts/safe-build-dir.sh
	$(RELEASE_BUILD)
	@$(MAKE) xorg-module
	.build/release/shieldbench
	@# what accessibility costs a GTK and a Qt app (docs/performance.md, "Accessibility bus cost")
	scripts/bench-accessibility.sh .build/release/shieldctl
	@# an ordinary desktop's X server instructions without ÷ with the daemon (docs/performance.md,
	@# "Daemon CPU and overhead"): xterm, zenity, featherpad and dillo under callgrind
	scripts/bench-desktop.sh .build/release/shieldctl
	@$(MAKE) xorg-bench

## libFuzzer over the policy parser and the capture/property decoders (FUZZ_SECONDS per
## target, default 60); fails on a crash and keeps the reproducer (scripts/fuzz.sh).
fuzz:
	@scripts/fuzz.sh

## The unit tests under AddressSanitizer and ThreadSanitizer (scripts/sanitize.sh).
sanitize:
	@scripts/sanitize.sh

## The Xorg server extension module (xorg/README.md): builds .build/xorg/libcaptureshield.so;
## xorg-test runs it in headless Xorg servers (dummy driver); xorg-bench runs x11perf with/without it.
xorg-module:
	@$(MAKE) -C xorg module

xorg-test:
	@scripts/install-deps.sh xorg
	@$(MAKE) -C xorg test
	@# the suites again, their attackers as clients of the other byte order (s390x under qemu)
	@$(MAKE) -C xorg test-swapped
	@$(MAKE) -C xorg abi-test
	@scripts/test-install-xorg.sh

## One suite of the Xorg module's tests (xorg/tests/t-SUITE.sh), after building the module and
## the probes: `make xorg-test-one SUITE=t-keymap`. CS_MODDIR=DIR runs it against the module
## built in DIR (e.g. an older build, to see the suite fail there).
xorg-test-one:
	@test -n "$(SUITE)" || { echo "usage: make xorg-test-one SUITE=<suite>, e.g. SUITE=t-keymap (xorg/tests/t-*.sh)" >&2; exit 64; }
	@scripts/install-deps.sh xorg
	@$(MAKE) -C xorg test-one SUITE='$(SUITE)'

## the Xorg module's property-based generator, long run (500,000 random and extreme requests
## per server, xorg/tests/t-fuzz.sh, which xorg-test runs with 100,000; CS_FUZZ_SEED replays)
xorg-fuzz:
	@scripts/install-deps.sh xorg
	@$(MAKE) -C xorg fuzz

xorg-bench:
	@scripts/install-deps.sh xorg
	@$(MAKE) -C xorg bench

clean:
	rm -rf .build demo-out

## Installing: `make install` (PREFIX=/usr/local, SYSCONFDIR=/etc, DESTDIR for staging)
## builds the release binary and installs it with the systemd user unit, the XDG
## autostart entry, the man page, the example policy and shell completions;
## `make uninstall` (same variables) removes exactly those files. The file list is in
## scripts/install.sh. `make man` writes the man page to .build/man/shieldctl.1.
## INSTALL_BUILD_FLAGS: extra `swift build` flags for their release build, e.g.
## `--scratch-path DIR` (the install test uses one: a `swift test` holds the lock of .build).
## NOBUILD=1 installs the .build/release/shieldctl already built, without swift (for
## `make release && sudo make install NOBUILD=1`: sudo's PATH often has no swift).
SYSCONFDIR ?= /etc
INSTALL_BUILD_FLAGS ?=
INSTALL_ENV = DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" SYSCONFDIR="$(SYSCONFDIR)"
INSTALL_BUILD = $(RELEASE_BUILD) $(INSTALL_BUILD_FLAGS)
INSTALL_BIN = "$$($(INSTALL_BUILD) --show-bin-path)/shieldctl"

.PHONY: install uninstall man install-xorg-module deb deb-test

## `make install-xorg-module` (same variables; XORG_MODULEDIR defaults to pkg-config's
## moduledir of xorg-server) builds the Xorg module and installs it into the server's
## extensions/ with $(SYSCONFDIR)/X11/xorg.conf.d/50-captureshield.conf, which loads it
## and trusts $(PREFIX)/bin/shieldctl; `make uninstall` removes these too. NOBUILD=1 installs
## the .build/xorg/libcaptureshield.so already built.
install-xorg-module:
ifndef NOBUILD
	@$(MAKE) --no-print-directory xorg-module
endif
	@$(INSTALL_ENV) scripts/install.sh install-xorg .build/xorg/libcaptureshield.so

## `make deb`: Debian packages captureshield and captureshield-xorg-module (its Depends:
## the xserver-xorg-core series it was built against) in .build/deb, from a release build
## (scripts/deb.sh, docs/install.md). NOBUILD=1 packages what is already built.
deb:
ifndef NOBUILD
	@scripts/install-deps.sh deb
	$(RELEASE_BUILD)
	@$(MAKE) --no-print-directory xorg-module
endif
	@scripts/deb.sh

## `make deb-test`: `make deb`, then scripts/test-deb.sh checks the packages' files, control
## fields and conffiles, and that lintian reports no error or warning (not in `make test`:
## it needs lintian and a release build in .build/release).
deb-test: deb
	@scripts/test-deb.sh

install:
ifdef NOBUILD
	@$(INSTALL_ENV) scripts/install.sh install .build/release/shieldctl
else
	@scripts/install-deps.sh build
	$(INSTALL_BUILD)
	@$(INSTALL_ENV) scripts/install.sh install $(INSTALL_BIN)
endif

uninstall:
	@$(INSTALL_ENV) scripts/install.sh uninstall

man:
	@scripts/install-deps.sh build
	$(INSTALL_BUILD)
	@mkdir -p .build/man
	@$(INSTALL_ENV) scripts/gen-man.sh $(INSTALL_BIN) .build/man/shieldctl.1
	@echo "wrote .build/man/shieldctl.1 (read it with: man -l .build/man/shieldctl.1)"
