#!/usr/bin/env bash
# The extension ABI the module declares is the installed server's, and a module built for
# another major ABI is refused by the Xorg loader with a plain log line, without harm to the
# server. Runs headless Xorg servers (dummy driver) as the suites do. Needs OUT (build dir,
# with libcaptureshield.so). Usage: OUT=.build/xorg xorg/tests/abi.sh   (make xorg-test runs it)
set -euo pipefail
cd "$(dirname "$0")"
: "${OUT:?OUT must be the build directory}"
TMP=$(mktemp -d)
. ./xorg-lib.sh
trap 'stop_all_xorg; rm -rf "$TMP"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

# The server's extension ABI: pkg-config's abi_extension (xorg-server.pc), else the SDK macro.
abi=$(pkg-config --variable=abi_extension xorg-server 2>/dev/null || true)
if [ -z "$abi" ]; then
  abi=$(printf '#include <xorg-server.h>\n#include <xf86Module.h>\n#include <stdio.h>\nint main(void){printf("%%u.%%u\\n",(unsigned)GET_ABI_MAJOR(ABI_EXTENSION_VERSION),(unsigned)GET_ABI_MINOR(ABI_EXTENSION_VERSION));return 0;}\n' |
    ${CC:-cc} $(pkg-config --cflags xorg-server) -x c - -o "$TMP/abi" && "$TMP/abi")
fi
major=${abi%%.*}
echo "server extension ABI: $abi"

# 1. the module as built: the loader logs the ABI the module declares, which is the server's
write_conf "$TMP/good.conf" 1
start_xorg good "$TMP/good.conf"
check "the built module declares ABI class 'X.Org Server Extension', version $abi" \
  "grep -q 'ABI class: X.Org Server Extension, version $abi\$' '$LOG_good'"
check "the built module loads and is active" "grep -q 'CAPTURESHIELD: active' '$LOG_good'"
stop_all_xorg

# 2. a copy built for the next major ABI: refused, with a log line that says why
bad=$((major + 1))
mkdir -p "$TMP/bad"
${CC:-cc} -O2 -fPIC -fvisibility=hidden -DCS_TEST_ABI_MAJOR=$bad $(pkg-config --cflags xorg-server pixman-1) \
  -shared -o "$TMP/bad/libcaptureshield.so" ../module/*.c
OUT=$TMP/bad write_conf "$TMP/bad.conf" 1
start_xorg bad "$TMP/bad.conf"
check "a module built for ABI $bad.0 is refused: the log names both majors" \
  "grep -Eq 'module ABI major version \\($bad\\) doesn.t match the server.s version \\($major\\)' '$LOG_bad'"
check "... and says the module failed to load" \
  "grep -q 'Failed to load module \"captureshield\"' '$LOG_bad'"
check "... and the module never ran" "! grep -q 'CAPTURESHIELD:' '$LOG_bad'"
command -v xdpyinfo >/dev/null &&
  check "... and the server still serves clients" "DISPLAY=$XDISPLAY_bad xdpyinfo >/dev/null 2>&1"
grep -E 'captureshield|ABI major' "$LOG_bad" | sed 's/^/    log: /'
stop_all_xorg
[ $fail -eq 0 ] && echo "abi.sh: all passed" || { echo "abi.sh: FAILED"; exit 1; }
