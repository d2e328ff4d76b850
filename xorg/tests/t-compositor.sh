#!/usr/bin/env bash
# CaptureShield Xorg tests: what the screen shows is what counts (rule opacity). Under a
# trusted compositor (picom, on the Trust list) a window covers a secure window only when
# its owner is trusted: the compositor draws windows translucent as it likes
# (_NET_WM_WINDOW_OPACITY, inactive-opacity), which the server does not see. Attacker: uid
# nobody, censor and deny; control: the same server with the rule off (DisableRules
# opacity), where the attacks get the secret. CS_MODDIR=DIR runs the suite with the module
# built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-comp
for b in "$ATK" "$PROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
PICOM=$(command -v picom) || { echo "Error: picom is not installed (scripts/install-deps.sh xorg)" >&2; exit 1; }

conf() { local f=$1; shift; mod_conf "$f" "Option \"Trust\" \"$PICOM:$TPROBE\"" "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "opacity"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule opacity off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

# compositor SRV [picom options]: starts picom (root: the session's user) on SRV; waits
# until the module logged it as trusted and it redirected the screen
compositor() {
  local srv=$1 lg=LOG_$1 i; shift
  DISPLAY=$(eval echo "\$XDISPLAY_$srv") "$PICOM" --backend xrender --config /dev/null \
    --no-fading-openclose "$@" >"$TMP/picom-$srv.log" 2>&1 &
  PICOM_PID=$!; BG_PIDS+=("$PICOM_PID")
  for i in $(seq 100); do grep -q "picom) is trusted" "${!lg}" && break; sleep 0.1; done
  sleep 1      # its first frames
}
stop_compositor() { kill "$PICOM_PID" 2>/dev/null || true; wait "$PICOM_PID" 2>/dev/null || true; }
atk() { as_nobody "$ATK" "$@" 2>&1 | tr '\n' ' '; }

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  # 1. the attacker's own window over the secure window, _NET_WM_WINDOW_OPACITY 0, 0.5, then
  #    1 (opaque: what the rule costs an untrusted reader: its own window reads black there)
  for op in 0 0.5 1; do
    start_victim
    compositor $srv
    out=$(atk over "$V_S" $op)
    case $srv in
      A) expect "$srv: own window of opacity $op over the secure window: root read" "$out" exact = 0 tinted = 0 own = 0 ;;
      D) expect "$srv: own window of opacity $op over the secure window: root read refused" "$out" exact = 0 tinted = 0 ;;
      C) if [ $op = 1 ]; then
           expect "$srv (control, opacity off): own opaque window over it reads as itself" "$out" own -gt 30000 tinted = 0
         else
           expect "$srv (control, opacity off): own window of opacity $op over it: the secret shows" "$out" tinted -gt 30000
         fi ;;
    esac
    stop_compositor
    stop_victim
  done
  # 2. no attacker window: the user's own compositor makes every unfocused window
  #    translucent (inactive-opacity 0.5), the victim's blue window over its secure one too
  start_victim
  compositor $srv --inactive-opacity 0.5
  out=$(atk read "$V_S")
  case $srv in
    A|D) expect "$srv: picom --inactive-opacity 0.5, nothing of the secure window shows" "$out" exact = 0 tinted = 0 ;;
    C) expect "$srv (control, opacity off): inactive-opacity 0.5: the secret shows" "$out" tinted -gt 1000 ;;
  esac
  stop_compositor
  stop_victim
done
# the user keeps seeing the window: a trusted reader (the Trust list's probe) reads the
# screen as the compositor draws it, the secret included
export DISPLAY=$XDISPLAY_A
start_victim
compositor A
out=$("$TPROBE" capture getimage 1 2>&1 | tr '\n' ' ')
expect "A: a trusted reader sees the secure window under the compositor" "$out" red_max -gt 30000
stop_compositor
stop_victim
summary
