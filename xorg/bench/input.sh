#!/usr/bin/env bash
# CaptureShield Xorg bench: key events per second through Xorg with the module ÷ without it.
# A client owns a focused secure window and types into it through XTEST (press + release,
# batches of 50), reading every KeyPress/KeyRelease back: with the module each key passes the
# input rule's hooks (XTEST dispatch, key grab check, delivery) in its most expensive case,
# a focused secure window. Rounds interleave with, without, without, with, ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/../../.build/xorg}
ROUNDS=${CS_BENCH_ROUNDS:-20}
KEYS=${CS_BENCH_KEYS:-5000}
TMP=$(mktemp -d /tmp/csbench.XXXXXX)
. "$here/../tests/xorg-lib.sh"
trap 'stop_all_xorg; rm -rf "$TMP"' EXIT
[ -f "$OUT/libcaptureshield.so" ] && [ -x "$OUT/atk-input" ] ||
  { echo "Error: build first (make -C xorg module probes)" >&2; exit 1; }
write_conf "$TMP/with.conf" 1
write_conf "$TMP/without.conf" 0
start_xorg W "$TMP/with.conf"
start_xorg N "$TMP/without.conf"
run() { DISPLAY=$2 "$OUT/atk-input" bench "$KEYS" 1 | sed -n 's/.*events_per_s=//p' | sed "s/^/$1 /" >>"$TMP/results"; }
echo "# $ROUNDS rounds of $KEYS XTEST keys (press + release) into a focused secure window"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then run with "$XDISPLAY_W"; run without "$XDISPLAY_N"
  else run without "$XDISPLAY_N"; run with "$XDISPLAY_W"; fi
done
awk '
  { if ($1=="with") w[++nw]=$2; else o[++no]=$2 }
  function median(a, m,   i, j, t) { for (i=1;i<=m;i++) for (j=i+1;j<=m;j++) if (a[j]+0 < a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
    return m%2 ? a[(m+1)/2] : (a[m/2]+a[m/2+1])/2 }
  END { mw=median(w, nw); mo=median(o, no)
    printf "%-28s %12s %12s %8s\n", "key events/s (median)", "with", "without", "ratio"
    printf "%-28s %12.0f %12.0f %8.3f\n", "XTEST keys, secure focus", mw, mo, mo ? mw/mo : 0 }' "$TMP/results"
