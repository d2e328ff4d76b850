#!/usr/bin/env bash
# CaptureShield Xorg tests: the pointer over a secure window (rule pointer). The user (a
# trusted program's XTEST: the user's hand) moves the pointer 10 times over a secure window
# and clicks after each move, as on an on-screen keyboard or a PIN pad; untrusted
# listeners (uid nobody) poll QueryPointer and XIQueryPointer every millisecond, read the
# motion history (GetMotionEvents) after the moves, select XI2 raw button
# presses and raw motion on the root, and core PointerMotion on the root (motion the
# window under the pointer does not take propagates there). While the pointer is over the
# secure window they learn no position and no click; positive control: the same on a
# server with the rule off (DisableRules pointer), where they learn them. Censor and deny. CS_MODDIR=DIR: the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-ptr
[ -x "$ATK" ] || { echo "Error: $ATK not built" >&2; exit 1; }
USERHAND=$(trusted_copy "$ATK" atk-ptr-trusted)
MS=20000
export CS_STOP_FILE=$TMP/moved
conf() { local f=$1; shift; mod_conf "$f" "Option \"Trust\" \"$USERHAND\"" "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "pointer"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule pointer off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

# the part of the victim's secure window (100,100 200x200) that its blue window leaves free
R="100 100 150 150"

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  for kind in secure; do
    start_victim
    rm -f "$CS_STOP_FILE"
    "$USERHAND" user 10 10 5 5 1 >/dev/null     # start outside the window
    bg poll as_nobody "$ATK" poll $MS $R
    bg xipoll as_nobody "$ATK" xipoll $MS $R
    bg xi2 as_nobody "$ATK" xi2 $MS
    bg motion as_nobody "$ATK" motion $MS $R
    wait_ready poll xipoll xi2 motion
    u=$("$USERHAND" user $R 10)
    hist=$(as_nobody "$ATK" history $R)    # while the pointer is still over the window
    touch "$CS_STOP_FILE"
    wait_done poll xipoll xi2 motion
    out="$u $(last poll) $(last xipoll) $(last xi2) $(last motion) $hist"
    stop_victim
    echo "#   $srv $kind: $out"
    if [ $kind = secure ] && [ $srv != C ]; then
      # (the move that enters the window is processed while the pointer is still outside:
      # its raw motion event is delivered, 1 at most)
      expect "$srv: pointer over the secure window: no position, no click, no motion inside" "$out" \
        sent = 10 inside = 0 positions = 0 xierr = 0 xiinside = 0 xipositions = 0 raw_buttons = 0 \
        raw_motion -le 1 motion_inside = 0 hist_err = 0 hist_inside = 0
    else
      expect "$srv (control, rule pointer off): every click and the positions" "$out" \
        sent = 10 positions -ge 5 xipositions -ge 5 raw_buttons = 10 raw_motion -ge 10 motion_inside -ge 10 \
        hist_inside -ge 5
    fi
  done
done
summary
