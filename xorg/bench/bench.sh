#!/usr/bin/env bash
# CaptureShield Xorg bench: x11perf per operation on Xorg with the module ÷ without it, interleaved runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/../../.build/xorg}
ROUNDS=${CS_BENCH_ROUNDS:-4}
TIME=${CS_BENCH_TIME:-1}
OPS=${CS_BENCH_OPS:-"-copywinwin10 -getimage10 -getimage500 -shmget500 -rect10 -noop -prop"}
TMP=$(mktemp -d /tmp/csbench.XXXXXX)
. "$here/../tests/xorg-lib.sh"
VPIDS=()
cleanup() {
  local p
  for p in "${VPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_all_xorg
  rm -rf "$TMP"
}
trap cleanup EXIT
command -v x11perf >/dev/null || { echo "Error: x11perf missing (package x11-apps)" >&2; exit 1; }
[ -f "$OUT/libcaptureshield.so" ] && [ -x "$OUT/csprobe" ] || { echo "Error: build first (make -C xorg module probes)" >&2; exit 1; }

write_conf "$TMP/with.conf" 1
write_conf "$TMP/without.conf" 0
start_xorg W "$TMP/with.conf"
start_xorg N "$TMP/without.conf"
# the same window tree on both: a secure window (with the module it is censored for
# x11perf, an untrusted client) and a plain one; x11perf's own window maps above them
for d in "$XDISPLAY_W" "$XDISPLAY_N"; do
  DISPLAY=$d "$OUT/csprobe" victim >"$TMP/victim$d" &
  VPIDS+=($!)
done
for i in $(seq 100); do
  [ -s "$TMP/victim$XDISPLAY_W" ] && [ -s "$TMP/victim$XDISPLAY_N" ] && break
  sleep 0.1
done

# run LABEL DISPLAY ROUND OP: appends "op label round rate"
run() {
  DISPLAY=$2 x11perf -repeat 1 -time "$TIME" "$4" 2>/dev/null |
    awk -v l="$1" -v r="$3" '/ reps @ / {
        rate=$0; sub(/.*\( */, "", rate); sub(/\/sec.*/, "", rate)
        name=$0; sub(/.*\/sec\): */, "", name); gsub(/ /, "_", name)
        print name, l, r, rate }' >>"$TMP/results"
}
echo "# x11perf, $ROUNDS rounds per operation of ${TIME}s each; every operation runs with, without,"
echo "# without, with, ... back to back, so both see the same machine load"
for op in $OPS; do
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then run with "$XDISPLAY_W" "$r" "$op"; run without "$XDISPLAY_N" "$r" "$op"
    else run without "$XDISPLAY_N" "$r" "$op"; run with "$XDISPLAY_W" "$r" "$op"; fi
  done
  echo "# $op done"
done
awk '
  { k=$1; v=$4; if ($2=="with") { w[k]=w[k] " " v; nw[k]++ } else { o[k]=o[k] " " v; no[k]++ }
    if (!(k in seen)) { seen[k]=1; order[++n]=k } }
  function median(s,   a, m, i, j, t) { m=split(s, a, " ");
    for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (a[j]+0 < a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
    return m%2 ? a[(m+1)/2] : (a[m/2]+a[m/2+1])/2 }
  function best(s,   a, m, i, b) { m=split(s, a, " "); b=0; for (i=1;i<=m;i++) if (a[i]+0 > b) b=a[i]+0; return b }
  END {
    printf "%-36s %13s %13s %7s %7s   %s\n", "operation (per second)", "with (median)", "without", "ratio", "best÷best", "all runs: with | without"
    for (i=1;i<=n;i++) { k=order[i]; mw=median(w[k]); mo=median(o[k]); bw=best(w[k]); bo=best(o[k]);
      printf "%-36s %13.1f %13.1f %7.3f %7.3f   %s |%s\n", k, mw, mo, (mo>0? mw/mo : 0), (bo>0? bw/bo : 0), w[k], o[k] }
  }' "$TMP/results"
