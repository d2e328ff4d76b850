#!/usr/bin/env bash
# CaptureShield Xorg tests: the keyboard's meaning while a secure window has the focus (rule
# keymap). An untrusted client (uid nobody) runs the real tools that change what keys do:
# xkbset (XKB SetControls: MouseKeys, which turns typed keys into pointer moves that
# QueryPointer decodes), xmodmap (core ChangeKeyboardMapping), setxkbmap (XKB
# GetKbdByName with load), xset (ChangeKeyboardControl: auto repeat) and xinput (XI
# SetDeviceButtonMapping). While the secure window has the focus each is refused and the
# state stays as it was; positive controls: the same with a plain window focused on the
# same server, and with the secure window on a server with the rule off (DisableRules
# keymap), where every change takes effect. CS_MODDIR=DIR runs the suite with the module
# built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-input
for b in "$ATK" xkbset xmodmap setxkbmap xset xinput; do
  command -v "$b" >/dev/null || { echo "Error: $b missing (scripts/install-deps.sh xorg)" >&2; exit 1; }
done
conf() { mod_conf "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "keymap"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule keymap off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

start_iv() {
  local line
  coproc IV { exec "$ATK" victim "$1"; }
  BG_PIDS+=("$IV_PID")
  read -r -t 10 line <&"${IV[0]}" || { echo "Error: input victim did not start" >&2; exit 1; }
}
stop_iv() {
  local p=$IV_PID
  eval "exec ${IV[1]}>&-"
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
XTP="Virtual core XTEST pointer"
# state: one word per change, 1 when it took effect
state() {
  local mk km lay rep btn
  mk=$(xkbset q 2>/dev/null | grep -c "^Mouse-Keys = On" || true)
  km=$(xmodmap -pke | grep -c "^keycode  38 = z" || true)
  lay=$(setxkbmap -query | grep -c "^layout: *de" || true)
  rep=$(xset q | grep -c "auto repeat:  off" || true)
  btn=$(xinput get-button-map "$XTP" 2>/dev/null | grep -c "^3 2 1" || true)
  echo "mousekeys=$mk keycode=$km layout=$lay repeat=$rep buttons=$btn"
}
# attack: each tool as nobody (setxkbmap before xmodmap: a new layout replaces the core
# mapping); errs = how many of them exited non-zero (xkbset does not check its request)
attack() {
  local errs=0
  as_nobody xkbset m >/dev/null 2>&1 || errs=$((errs + 1))
  as_nobody setxkbmap -layout de >/dev/null 2>&1 || errs=$((errs + 1))
  as_nobody xmodmap -e "keycode 38 = z" >/dev/null 2>&1 || errs=$((errs + 1))
  as_nobody xset r off >/dev/null 2>&1 || errs=$((errs + 1))
  as_nobody xinput set-button-map "$XTP" 3 2 1 >/dev/null 2>&1 || errs=$((errs + 1))
  echo "errs=$errs"
}
# undo: the settings back to the server's defaults (no secure window is focused then)
undo() {
  xkbset -m >/dev/null 2>&1 || true
  setxkbmap -layout us >/dev/null 2>&1 || true
  xset r on >/dev/null 2>&1 || true
  xinput set-button-map "$XTP" 1 2 3 >/dev/null 2>&1 || true
}

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  for secure in 1 0; do
    undo
    start_iv $secure
    before=$(state)
    a=$(attack)
    after=$(state)
    stop_iv
    if [ $secure = 1 ] && [ $srv != C ]; then
      expect "$srv: secure window focused: nobody's keymap and device changes refused, state kept [before $before]" \
        "$a $after" errs -ge 4 mousekeys = 0 keycode = 0 layout = 0 repeat = 0 buttons = 0
    elif [ $secure = 1 ]; then
      expect "$srv (control, keymap off): secure window focused: every change takes effect" \
        "$a $after" errs = 0 mousekeys = 1 keycode = 1 layout = 1 repeat = 1 buttons = 1
    else
      expect "$srv (control): a plain window focused: every change takes effect" \
        "$a $after" errs = 0 mousekeys = 1 keycode = 1 layout = 1 repeat = 1 buttons = 1
    fi
  done
  # what every GTK 3 and Qt 5 program sends, whatever has the focus (XIChangeCursor,
  # XkbPerClientFlags for detectable auto-repeat): done, or such a program ends with an X
  # error; XkbPerClientFlags' auto-reset controls (MouseKeys on when the client goes away)
  # refused while the secure window has the focus
  for secure in 1 0; do
    undo
    start_iv $secure
    o=$(as_nobody "$ATK" ordinary 2>&1)
    mk=$(xkbset q 2>/dev/null | grep -c "^Mouse-Keys = On" || true)
    stop_iv
    if [ $secure = 1 ] && [ $srv != C ]; then
      expect "$srv: secure window focused: nobody's cursor and per-client flags done, its auto-reset MouseKeys refused" \
        "$o mousekeys=$mk" cursor_err = 0 pcf_err = 0 autoreset_err = 10 mousekeys = 0
    else
      expect "$srv (control$([ $srv = C ] && echo ", keymap off")): secure=$secure: all done, MouseKeys on after nobody's exit" \
        "$o mousekeys=$mk" cursor_err = 0 pcf_err = 0 autoreset_err = 0 mousekeys = 1
    fi
  done
  lg=LOG_$srv
  if [ $srv != C ]; then
    if grep -q "CAPTURESHIELD: input refused to client" "${!lg}"; then ok "$srv: refusals logged"
    else bad "$srv: no refusal logged"; fi
  fi
done
summary
