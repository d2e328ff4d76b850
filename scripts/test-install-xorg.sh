#!/usr/bin/env bash
# `make install-xorg-module DESTDIR=<temp>` installs exactly the module and its xorg.conf.d
# snippet (which loads the module once and names $(PREFIX)/bin/shieldctl as the daemon,
# with no compositor list: the daemon grants the compositor), the X server
# accepts the snippet, and `make uninstall DESTDIR=<temp>` leaves no file behind.
# `make xorg-test` runs it (needs the Xorg SDK: scripts/install-deps.sh xorg).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES DESTDIR PREFIX SYSCONFDIR XORG_MODULEDIR
moduledir=$(pkg-config --variable=moduledir xorg-server)
files() { (cd "$1" && find . ! -type d | sed 's|^\./||' | sort); }

for prefix in /usr /opt/cs; do
  d=$tmp/root${prefix//\//_}
  make -s -C "$root" install-xorg-module DESTDIR="$d" PREFIX="$prefix" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; echo "FAIL make install-xorg-module PREFIX=$prefix"; exit 1; }
  want=$(printf '%s\n' "${moduledir#/}/extensions/libcaptureshield.so" etc/X11/xorg.conf.d/50-captureshield.conf | sort)
  check "PREFIX=$prefix: exactly the module and the snippet are installed" "[ \"\$(files '$d')\" = \"\$want\" ]"
  conf=$d/etc/X11/xorg.conf.d/50-captureshield.conf
  so=$d${moduledir}/extensions/libcaptureshield.so
  check "PREFIX=$prefix: the module is the one built, mode 0644" \
    "cmp -s '$so' '$root/.build/xorg/libcaptureshield.so' && [ \$(stat -c %a '$so') = 644 ]"
  check "PREFIX=$prefix: the snippet is mode 0644" "[ \$(stat -c %a '$conf') = 644 ]"
  check "PREFIX=$prefix: the snippet names $prefix/bin/shieldctl as the daemon (the only active Daemon line)" \
    "[ \"\$(grep -E '^[[:space:]]*Option[[:space:]]+\"Daemon\"' '$conf')\" = '        Option \"Daemon\" \"$prefix/bin/shieldctl\"' ]"
  check "PREFIX=$prefix: no active Trust line (no compositor list), no active DaemonUsers (the default)" \
    "! grep -Eq '^[[:space:]]*Option[[:space:]]+\"(Trust|DaemonUsers)\"' '$conf'"
  check "PREFIX=$prefix: SubSection \"captureshield\" in Section \"Module\", and no Load line" \
    "grep -q '^Section \"Module\"' '$conf' && grep -q 'SubSection \"captureshield\"' '$conf' && ! grep -Eq '^[[:space:]]*Load' '$conf'"
  check "PREFIX=$prefix: the commented examples: DaemonUsers default, a Trust line" \
    "grep -q '#Option \"DaemonUsers\" \"0,seat\"\$' '$conf' && grep -q '#Option \"Trust\" \"/usr/bin/picom\"\$' '$conf'"
  make -s -C "$root" uninstall DESTDIR="$d" PREFIX="$prefix" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; echo "FAIL make uninstall"; exit 1; }
  check "PREFIX=$prefix: make uninstall leaves no file behind" "[ -z \"\$(files '$d')\" ]"
done

# the X server reads the installed snippet: it loads the module once, with the Daemon option
if [ -x /usr/lib/xorg/Xorg ]; then
  make -s -C "$root" install-xorg-module DESTDIR="$tmp/x" PREFIX=/usr >/dev/null
  OUT=$tmp/x$moduledir/extensions TMP=$tmp
  . "$root/xorg/tests/xorg-lib.sh"
  trap 'stop_all_xorg; rm -rf "$tmp"' EXIT
  # no Section "Module" in the main config: one there replaces the snippet's (docs/install.md)
  write_conf "$tmp/with-module.conf" 0
  sed '/^Section "Module"/,/^EndSection/d' "$tmp/with-module.conf" >"$tmp/base.conf"
  mkdir -p "$tmp/snip.d"
  # start_xorg gives -configdir NAME.d: the installed snippet is what it reads
  cp "$tmp/x/etc/X11/xorg.conf.d/50-captureshield.conf" "$tmp/snip.d/"
  start_xorg snip "$tmp/base.conf"
  check "Xorg with the installed snippet: module active, 0 trusted programs, the daemon named, loaded once" \
    "grep -q 'CAPTURESHIELD: active, mode censor, 0 trusted program' '$LOG_snip' && grep -Eq 'CAPTURESHIELD: (daemon program|Daemon entry) /usr/bin/shieldctl' '$LOG_snip' && [ \$(grep -c 'LoadModule: \"captureshield\"' '$LOG_snip') = 1 ]"
  stop_all_xorg
fi
[ $fail -eq 0 ] && echo "test-install-xorg.sh: all passed" || { echo "test-install-xorg.sh: FAILED"; exit 1; }
