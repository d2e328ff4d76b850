#!/usr/bin/env bash
# CaptureShield Xorg tests: clients of either byte order. A byte-swapped client (atk-swap,
# which writes its requests itself: xcb speaks the host's order only) sends every request
# the module wraps, fields at their limits, each followed by a round trip, against a
# censor-mode and a deny-mode server, with and without a secure window; the server must
# answer every one (no crash, no hang) and the client's reads of the secure window must
# get nothing. The same from a host-order client. Positive control: a server with the read
# rules off, where the same swapped reads get the secret. Attacker: uid nobody.
# CS_MODDIR=DIR runs the suite with the module built in DIR (an old build: the swapped
# client's first CreateWindow crashed the server).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-swap
for b in "$ATK" "$PROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
OFF=getimage,copyarea,title,properties,property,namewindowpixmap,record,dbe,resources

conf() { mod_conf "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" "Option \"DisableRules\" \"$OFF\""
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rules off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"
declare -A PID_OF=([A]=${XORG_PIDS[0]} [D]=${XORG_PIDS[1]} [C]=${XORG_PIDS[2]})
TITLE=secret-title-of-24-bytes

atk() { as_nobody timeout 120 "$ATK" "$@" 2>&1 | tr '\n' ' ' || true; }
alive() { kill -0 "${PID_OF[$1]}" 2>/dev/null; }

for srv in A D C; do
  export DISPLAY
  eval "DISPLAY=\$XDISPLAY_$srv"
  for order in swapped host; do
    flag=; [ $order = host ] && flag=--host
    if ! alive $srv; then bad "$srv $order: the server is gone"; continue; fi
    # no secure window anywhere: the sweep aims at the root
    root=$(xwininfo -root | sed -n 's/.*Window id: \(0x[0-9a-f]*\).*/\1/p')
    out=$(atk $flag sweep "$root")
    expect "$srv $order sweep, no secure window" "$out alive_srv=$(alive $srv && echo 1 || echo 0)" \
      alive = 1 alive_srv = 1 sent -ge 40
    alive $srv || { bad "$srv $order: the server died, the rest not run"; break; }
    # a secure window: the sweep aims at it (tags, titles, copies, reparenting, extensions)
    start_victim
    out=$(atk $flag sweep "$V_S")
    expect "$srv $order sweep, secure window" "$out alive_srv=$(alive $srv && echo 1 || echo 0)" \
      alive = 1 alive_srv = 1 sent -ge 40
    stop_victim
    alive $srv || { bad "$srv $order: the server died, the rest not run"; break; }
    # the reads, on a fresh victim with a title
    start_victim
    xprop -id "$V_S" -set WM_NAME "$TITLE"
    out=$(atk $flag read "$V_S")
    case $srv in
      A) expect "$srv $order reads get nothing" "$out" root = 0 win = 0 copy = 0 title = 0 \
           untag = 10 tag = 1 namepix = 10 record = 10 dbe = 10 ;;
      D) expect "$srv $order reads refused" "$out" root = -10 win = -10 copy = 0 title = 0 \
           untag = 10 tag = 1 namepix = 10 record = 10 dbe = 10 ;;
      C) expect "$srv $order control: rules off, the reads get the secret" "$out" \
           root -gt 30000 win -gt 30000 copy -gt 30000 title = 24 untag = 0 tag = 0 ;;
    esac
    stop_victim
  done
  if alive $srv; then ok "$srv: the server is still running"; else bad "$srv: the server died"; fi
done
summary
