#!/bin/sh
# Instruction counts of the X server running the overhead workload (bench row 4) without and
# with the daemon, under callgrind (repeatable on a noisy machine, unlike wall clocks).
# Prints Ir per workload iteration for both and the functions whose counts grew most.
# Usage: scripts/profile-overhead.sh [ITERATIONS]   (needs a release build and valgrind)
set -eu
cd "$(dirname "$0")/.."
N=${1:-3000}
OUT=${PROFILE_DIR:-.build/profile-overhead}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
rm -rf "$OUT"
mkdir -p "$OUT"
command -v valgrind >/dev/null || scripts/install-deps.sh bench
for mode in without with; do
  # One run with the daemon between two without (or three without): 3 runs of N iterations.
  BENCH_XVFB_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=$OUT/xvfb-$mode.out" \
    BENCH_ONLY=overhead OVERHEAD_PLACEMENTS=split OVERHEAD_RUNS=1 OVERHEAD_MODE=$mode OVERHEAD_ITERATIONS=$N \
    BENCH_JSON="$OUT/bench-$mode.json" .build/release/shieldbench >"$OUT/bench-$mode.txt" 2>&1
done
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
W=$(total "$OUT/xvfb-without.out")
D=$(total "$OUT/xvfb-with.out")
# Three measured runs of N iterations each (plus identical start-up and calibration).
echo "X server instructions (callgrind): without $W, with $D"
awk -v w="$W" -v d="$D" -v n="$N" 'BEGIN {
  printf "per workload iteration (3 x %d): without %.0f Ir, with %.0f Ir, without / with %.3f\n", n, w / (3 * n), d / (3 * n), w / d }'
echo "functions whose instruction counts grew most (with - without):"
# "1,234 (12.3%)  file:function [object]" -> "1234<TAB>file:function [object]"
table() {
  callgrind_annotate --threshold=100 "$1" 2>/dev/null |
    awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ { c = $1; gsub(",", "", c); sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); print c "\t" $0 }'
}
table "$OUT/xvfb-without.out" >"$OUT/without.tsv"
table "$OUT/xvfb-with.out" >"$OUT/with.tsv"
awk -F'\t' -v n="$N" 'NR == FNR { w[$2] = $1; next } { d = $1 - w[$2]; if (d > 0) printf "%10.0f Ir/iteration  %s\n", d / (3 * n), $2 }' \
  "$OUT/without.tsv" "$OUT/with.tsv" | grep -v "PROGRAM TOTALS" | sort -rn | head -25
