#!/usr/bin/env bash
# CaptureShield Xorg tests: what DAMAGE tells about a secure window (rule damage). A secure
# window draws a caret 16 times, as a password field does at each key press; untrusted
# DAMAGE objects (uid nobody, level raw rectangles) on the secure window itself and on the
# root must get no report about its area (no time, no place), censor and deny; positive
# control: the same on a server with the rule off (DisableRules damage), where each caret
# is reported. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-damage
[ -x "$ATK" ] || { echo "Error: $ATK not built" >&2; exit 1; }
MS=20000
N=16
export CS_STOP_FILE=$TMP/drawn
conf() { mod_conf "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "damage"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule damage off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"


for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  coproc DV { exec "$ATK" victim; }
  BG_PIDS+=("$DV_PID")
  read -r -t 10 line <&"${DV[0]}" || { echo "Error: victim did not start" >&2; exit 1; }
  S=${line#S=}
  root=$(xwininfo -root | sed -n 's/.*Window id: \(0x[0-9a-f]*\).*/\1/p')
  rm -f "$CS_STOP_FILE"
  bg onroot as_nobody "$ATK" listen $MS "$root" 100 100 200 200
  bg onwin as_nobody "$ATK" listen $MS "$S" 0 0 200 200
  wait_ready onroot onwin
  echo "draw $N" >&"${DV[1]}"
  read -r -t 20 drawn <&"${DV[0]}" || drawn=none
  touch "$CS_STOP_FILE"
  wait_done onroot onwin
  r=$(last onroot); w=$(last onwin)
  kill "$DV_PID" 2>/dev/null || true; wait "$DV_PID" 2>/dev/null || true
  echo "#   $srv: $drawn; on the root: $r; on the window: $w"
  if [ $srv = C ]; then
    expect "$srv (control, damage off): every caret reported, on the root and on the window" \
      "$drawn $(echo "$r" | sed 's/inside=/root_inside=/') $(echo "$w" | sed 's/inside=/win_inside=/')" \
      drawn = $N root_inside -ge $N win_inside -ge $N
  else
    # (1 at most: the report DamageCreate makes of the whole drawable at once, before the
    # object is filtered; it tells the window's place, which GetGeometry tells too)
    expect "$srv: no report about the secure window's area, on the root or on the window" \
      "$drawn $(echo "$r" | sed 's/inside=/root_inside=/') $(echo "$w" | sed 's/inside=/win_inside=/')" \
      drawn = $N root_inside -le 1 win_inside -le 1
  fi
done
summary
