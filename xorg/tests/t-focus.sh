#!/usr/bin/env bash
# CaptureShield Xorg tests: the window manager moves the focus away from a focused secure
# window only at the user's own input (rule wmfocus). 13 keys are typed by a trusted
# program through XTEST (the user's keyboard) into a secure window that has the focus;
# the attacker (uid nobody) takes the focus through the window manager's role:
#  1. no window manager runs: it selects SubstructureRedirect on the root itself and
#     gives a window of its own the focus;
#  2. openbox (the user's, untrusted) runs: it maps an ordinary window, which openbox
#     focuses;
#  3. the same, then the user clicks on the attacker's window (a trusted XTEST click):
#     the user's own input, so the focus moves and the keys go there (on every server).
# Censor and deny servers; control: the rule off (DisableRules wmfocus), where 1 and 2
# take the keys. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-focus
IATK=$OUT/atk-input
for b in "$ATK" "$IATK"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
command -v openbox >/dev/null || { echo "Error: openbox missing (scripts/install-deps.sh xorg)" >&2; exit 1; }
TYPIST=$(trusted_copy "$IATK" atk-input-trusted)
CLICKER=$(trusted_copy "$ATK" atk-focus-trusted)
N=13
MS=20000
export CS_STOP_FILE=$TMP/typed
conf() { local f=$1; shift; mod_conf "$f" "Option \"Trust\" \"$TYPIST:$CLICKER\"" "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "wmfocus"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule wmfocus off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

start_iv() {
  local line
  coproc IV { exec "$IATK" victim 1; }
  BG_PIDS+=("$IV_PID")
  read -r -t 10 line <&"${IV[0]}" || { echo "Error: input victim did not start" >&2; exit 1; }
}
iv_count() { local line; echo count >&"${IV[1]}"; read -r -t 10 line <&"${IV[0]}"; echo "$line"; }
stop_iv() {
  local p=$IV_PID
  eval "exec ${IV[1]}>&-"
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
# bg NAME CMD...: in the background, output in $TMP/NAME
typed() { "$TYPIST" type >/dev/null; touch "$CS_STOP_FILE"; }
start_wm() {
  openbox --sm-disable >"$TMP/openbox.log" 2>&1 &
  WM_PID=$!; BG_PIDS+=("$WM_PID")
  local i
  for i in $(seq 100); do xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q window && break; sleep 0.1; done
}
stop_wm() { kill "$WM_PID" 2>/dev/null || true; wait "$WM_PID" 2>/dev/null || true; }

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  # 1. no window manager: the attacker becomes one and takes the focus
  start_iv
  rm -f "$CS_STOP_FILE"
  bg steal as_nobody "$ATK" wmsteal $MS; wait_ready steal
  typed; wait_done steal; v=$(iv_count); stop_iv
  if [ $srv = C ]; then
    expect "$srv (control, wmfocus off): no WM, the attacker selects SubstructureRedirect and takes the focus" "$(last steal) $v" focus_err = 0 stolen_keys = $N keys = 0
  else
    expect "$srv: no WM, the attacker selects SubstructureRedirect; its SetInputFocus changes nothing, the keys stay" "$(last steal) $v" stolen_keys = 0 keys = $N
  fi
  # 2. openbox runs: the attacker maps a window, openbox focuses it
  start_wm
  start_iv
  rm -f "$CS_STOP_FILE"
  bg mapnew as_nobody "$ATK" mapnew $MS; wait_ready mapnew
  sleep 0.5    # openbox manages the window and gives it the focus
  typed; wait_done mapnew; v=$(iv_count); stop_iv
  if [ $srv = C ]; then
    # (openbox moves the focus when it maps the window: the keys leave the secure window;
    # where they go depends on openbox's timing, its own window or the attacker's)
    expect "$srv (control, wmfocus off): openbox takes the focus away from the secure window" "$(last mapnew) $v" keys = 0
  else
    expect "$srv: openbox may not focus the attacker's new window away from the secure one" "$(last mapnew) $v" stolen_keys = 0 keys = $N
  fi
  # 3. the same, then the user clicks on the attacker's window: the focus moves there
  start_iv
  rm -f "$CS_STOP_FILE"
  bg mapnew2 as_nobody "$ATK" mapnew $MS; wait_ready mapnew2
  sleep 0.5
  win=$(sed -n 's/^ready win=//p' "$TMP/mapnew2")
  [ -n "$win" ] || { bad "$srv: the attacker's window did not map"; stop_iv; stop_wm; continue; }
  geo=$(xwininfo -id "$win")
  x=$(echo "$geo" | sed -n 's/.*Absolute upper-left X: *//p'); y=$(echo "$geo" | sed -n 's/.*Absolute upper-left Y: *//p')
  c=$("$CLICKER" click $((x + 20)) $((y + 20)))
  sleep 0.3
  typed; wait_done mapnew2; v=$(iv_count); stop_iv
  expect "$srv: the user clicks on the other window: openbox moves the focus there, the keys follow" "$c $(last mapnew2) $v" click_err = 0 stolen_keys = $N keys = 0
  stop_wm
done
summary
