#!/usr/bin/env bash
# The unit test suite (CaptureShieldTests: no X) under AddressSanitizer and ThreadSanitizer,
# each in a scratch path of its own (sanitized builds cannot share one). Under
# ThreadSanitizer also the integration suite that runs the RECORD thread in the test process
# on a real Xvfb (IntegrationTests.RecordThreadTests): the daemon's threads, checked.
# Prints how long each took.
#   scripts/sanitize.sh [address|thread]...
# LeakSanitizer is off by default (SANITIZE_DETECT_LEAKS=1 turns it on): Foundation itself
# leaks (readBytesFromFile, NSRegularExpression), which would fail every run.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SCRATCH=${SANITIZE_SCRATCH:-.build/sanitize}
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(address thread)
if [ "${SANITIZE_DETECT_LEAKS:-0}" = 0 ]; then export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"; fi
status=0
for kind in "${KINDS[@]}"; do
  case "$kind" in address | thread) ;; *) echo "sanitize.sh: unknown sanitizer $kind" >&2; exit 64 ;; esac
  started=$(date +%s)
  echo "== swift test --sanitize=$kind --filter CaptureShieldTests (scratch $SCRATCH-$kind)"
  if ! "$SWIFT" test --sanitize="$kind" --scratch-path "$SCRATCH-$kind" --filter CaptureShieldTests; then
    status=1
  fi
  if [ "$kind" = thread ]; then
    echo "== swift test --sanitize=thread --filter IntegrationTests.RecordThreadTests (the RECORD thread on Xvfb)"
    if ! TSAN_OPTIONS="halt_on_error=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" "$SWIFT" test --sanitize=thread \
      --scratch-path "$SCRATCH-$kind" --filter IntegrationTests.RecordThreadTests; then
      status=1
    fi
  fi
  echo "== $kind: $(($(date +%s) - started)) s"
done
exit $status
