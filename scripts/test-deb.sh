#!/usr/bin/env bash
# Checks the packages `make deb` built in .build/deb: each holds exactly the files of
# `make install` / `make install-xorg-module` (PREFIX=/usr, man page gzipped) plus its
# copyright, changelog.Debian.gz and lintian override, /etc files are conffiles, the
# control fields are right, and lintian reports no error or warning.
# Usage: make deb-test   (= make deb, then this; about a minute after the release build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.build/deb
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
version=$(sed -n 's/.*string = "\([^"]*\)".*/\1/p' "$root/Sources/CaptureShield/Version.swift")-1
arch=$(dpkg --print-architecture)
main=$out/captureshield_${version}_$arch.deb
xmod=$out/captureshield-xorg-module_${version}_$arch.deb
check "both packages were built" "[ -f '$main' ] && [ -f '$xmod' ]"
[ $fail -eq 0 ] || exit 1
contents() { dpkg-deb --fsys-tarfile "$1" | tar -t | grep -v '/$' | sed 's|^\./||' | sort; }
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES DESTDIR PREFIX SYSCONFDIR

want=$( { PREFIX=/usr SYSCONFDIR=/etc "$root/scripts/install.sh" list | sed 's|^/||; s|\.1$|.1.gz|'
  printf '%s\n' usr/share/doc/captureshield/copyright usr/share/doc/captureshield/changelog.Debian.gz \
    usr/share/lintian/overrides/captureshield; } | sort)
check "captureshield holds exactly make install's files (+ copyright, changelog, override)" \
  "[ \"\$(contents '$main')\" = \"\$want\" ]"
want=$( { PREFIX=/usr SYSCONFDIR=/etc "$root/scripts/install.sh" list-xorg | sed 's|^/||'
  printf '%s\n' usr/share/doc/captureshield-xorg-module/copyright \
    usr/share/doc/captureshield-xorg-module/changelog.Debian.gz \
    usr/share/lintian/overrides/captureshield-xorg-module; } | sort)
check "captureshield-xorg-module holds exactly the module, the snippet (+ copyright, changelog, override)" \
  "[ \"\$(contents '$xmod')\" = \"\$want\" ]"
check "captureshield: /etc/xdg/autostart/captureshield.desktop is its conffile" \
  "[ \"\$(dpkg-deb --ctrl-tarfile '$main' | tar -xO ./conffiles)\" = /etc/xdg/autostart/captureshield.desktop ]"
check "captureshield-xorg-module: the snippet is its conffile" \
  "[ \"\$(dpkg-deb --ctrl-tarfile '$xmod' | tar -xO ./conffiles)\" = /etc/X11/xorg.conf.d/50-captureshield.conf ]"
check "the snippet in the package names /usr/bin/shieldctl as the daemon, and lists no compositor" \
  "dpkg-deb --fsys-tarfile '$xmod' | tar -xO ./etc/X11/xorg.conf.d/50-captureshield.conf | grep -q '^ *Option \"Daemon\" \"/usr/bin/shieldctl\"\$' && ! dpkg-deb --fsys-tarfile '$xmod' | tar -xO ./etc/X11/xorg.conf.d/50-captureshield.conf | grep -q '^ *Option \"Trust\"'"
check "captureshield Depends on libsodium, libxcb and libdbus (dpkg-shlibdeps)" \
  "dpkg-deb -f '$main' Depends | grep -q 'libsodium' && dpkg-deb -f '$main' Depends | grep -q 'libxcb1' && dpkg-deb -f '$main' Depends | grep -q 'libdbus-1-3'"
xver=$(dpkg-query -W -f='${Version}' xserver-xorg-core)
xseries=$(echo "$xver" | sed -E 's/^(([0-9]+:)?[0-9]+\.[0-9]+).*/\1/')
check "captureshield-xorg-module Depends on xserver-xorg-core (>= $xseries), (<< next minor) and captureshield (= $version)" \
  "dpkg-deb -f '$xmod' Depends | grep -qF 'xserver-xorg-core (>= $xseries), xserver-xorg-core (<< ' && dpkg-deb -f '$xmod' Depends | grep -qF 'captureshield (= $version)'"
check "the packaged shieldctl (stripped) runs and says ${version%-1}" \
  "d=\$(mktemp -d) && dpkg-deb -x '$main' \"\$d\" && [ \"\$(\"\$d/usr/bin/shieldctl\" --version)\" = '${version%-1}' ]; rm -rf \"\$d\""
if command -v lintian >/dev/null; then
  rc=0
  lintian --fail-on error,warning "$main" "$xmod" >"${TMPDIR:-/tmp}/test-deb-lintian.$$" 2>&1 || rc=$?
  check "lintian: no error or warning" "[ $rc -eq 0 ]"
  grep -v 'running with root privileges' "${TMPDIR:-/tmp}/test-deb-lintian.$$" | sed 's/^/    lintian: /' || true
  rm -f "${TMPDIR:-/tmp}/test-deb-lintian.$$"
else
  echo "FAIL lintian is not installed (scripts/install-deps.sh deb)"; fail=1
fi
[ $fail -eq 0 ] && echo "test-deb.sh: all passed" || { echo "test-deb.sh: FAILED"; exit 1; }
