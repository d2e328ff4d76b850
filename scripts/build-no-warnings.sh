#!/usr/bin/env bash
# Builds everything (tests too) and fails if the compiler printed any warning.
set -uo pipefail
log=$(mktemp)
swift build --build-tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || { rm -f "$log"; exit "$status"; }
if grep -q "warning:" "$log"; then
  echo "Error: the build printed warnings (Swift 6 mode must stay warning-free):" >&2
  grep "warning:" "$log" | sort -u >&2
  rm -f "$log"; exit 1
fi
rm -f "$log"
