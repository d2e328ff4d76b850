#!/usr/bin/env bash
# libFuzzer over the pure code (no X): the policy parser and the capture/property/ELF decoders.
# Each target is compiled with swiftc -sanitize=fuzzer,address from the sources of the
# CaptureShieldCore target (Sources/CaptureShieldCore, which the compiler keeps free of
# XCB, D-Bus and libsodium: Package.swift gives it no system library) plus its entry file
# in Fuzz/, then run for FUZZ_SECONDS (default 60) on a copy of its seed corpus in
# Fuzz/corpus/<target>. A crash fails the script; its input is kept in
# $FUZZ_OUT (default /tmp/captureshield-fuzz) as crash-*.
# Leak detection is off by default (FUZZ_DETECT_LEAKS=1 turns it on): swift-corelibs-
# Foundation's NSRegularExpression leaks ~0.5 KB per compiled pattern (_CFRegularExpressionCreate),
# which LeakSanitizer reports as a crash on the first policy with a regex.
#   scripts/fuzz.sh [policy|capture]...     FUZZ_SECONDS=600 scripts/fuzz.sh policy
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFTC=${SWIFTC:-swiftc}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
OUT=${FUZZ_OUT:-/tmp/captureshield-fuzz}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(policy capture)
mkdir -p "$OUT"
if [ "${FUZZ_DETECT_LEAKS:-0}" = 0 ]; then export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"; fi

# The core target's sources, all of them.
mapfile -t sources < <(find Sources/CaptureShieldCore -name '*.swift' | sort)
status=0
for target in "${TARGETS[@]}"; do
  case "$target" in
    policy) entry=Fuzz/PolicyFuzz.swift ;;
    capture) entry=Fuzz/CaptureFuzz.swift ;;
    *) echo "fuzz.sh: unknown target $target (policy, capture)" >&2; exit 64 ;;
  esac
  binary="$OUT/fuzz-$target"
  echo "== building $binary"
  "$SWIFTC" -sanitize=fuzzer,address -parse-as-library -module-name CaptureShieldCore -O -g \
    "${sources[@]}" "$entry" -o "$binary"
  corpus="$OUT/corpus-$target"
  mkdir -p "$corpus"
  cp -n Fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  echo "== fuzzing $target for ${SECONDS_PER_TARGET}s"
  if ! (cd "$OUT" && "$binary" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -detect_leaks="${FUZZ_DETECT_LEAKS:-0}" -artifact_prefix="$OUT/$target-" "$corpus"); then
    echo "fuzz.sh: $target FAILED; reproducer(s): $(ls "$OUT/$target"-* 2>/dev/null | tr '\n' ' ')" >&2
    status=1
  fi
done
exit $status
