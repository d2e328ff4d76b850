# CaptureShield. `make demo` runs the main job; `make test` runs every test.
SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=
CONFIG ?= debug

.PHONY: all build release deps test lint format demo bench clean

all: build

deps:
	@scripts/install-deps.sh test

build:
	@scripts/install-deps.sh build
	$(SWIFT) build

release:
	@scripts/install-deps.sh build
	$(SWIFT) build -c release

## The whole test suite: installs what it needs, checks formatting, builds with no
## warnings, runs unit and integration tests (integration tests start their own Xvfb).
test:
	@scripts/install-deps.sh test
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests
	@scripts/build-no-warnings.sh
	$(SWIFT) test

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

## The main job: on a desktop, protects it; without one, a self-contained demo on a
## private Xvfb that writes screenshots and a report to ./demo-out.
demo:
	@scripts/install-deps.sh demo
	$(SWIFT) build -c release
	@scripts/demo.sh

bench:
	@scripts/install-deps.sh bench
	$(SWIFT) build -c release
	.build/release/shieldbench

clean:
	rm -rf .build demo-out
