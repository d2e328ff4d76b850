#!/usr/bin/env bash
# CaptureShield Xorg tests: the server's lifecycle. (a) servers WITHOUT -noreset, three
# generations each (the server resets when its last client leaves and runs the module's
# init again); (b) two screens; (c) a failed init leaves the module wholly inactive;
# (d) blanking allocations that fail leave black or BadAlloc, never the pixels.
# CS_MODDIR=DIR runs the suite with the module built in DIR (one that crashes at a
# server reset fails (a): the control that this suite sees such a crash).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/t-lib.sh"
ATK=$OUT/atk-life
ATKT=$(trusted_copy "$ATK" atk-trusted)   # the same program, trusted (the Trust list names it)
TRUST="Option \"Trust\" \"$TPROBE:$ATKT\""
VIS=37500

# the last started server's pid
xpid() { echo "${XORG_PIDS[-1]}"; }
# wait_log FILE PATTERN COUNT: up to 10 s until PATTERN occurs COUNT times in FILE
wait_log() {
  local i
  for i in $(seq 100); do [ "$(grep -c "$2" "$1")" -ge "$3" ] && return 0; sleep 0.1; done
  return 1
}
# victim_atk: atk-life's victim on $DISPLAY (its screen); sets L_S L_A L_screen, LVPID
victim_atk() {
  local f i line=""
  f=$TMP/victim.$RANDOM; : >"$f"
  "$ATK" victim >"$f" 2>&1 &
  LVPID=$!; BG_PIDS+=("$LVPID")
  for i in $(seq 100); do line=$(grep "^S=" "$f" || true); [ -n "$line" ] && break; sleep 0.1; done
  [ -n "$line" ] || { echo "Error: victim did not start: $(cat "$f")" >&2; return 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/L_/')"
}
stop_victim_atk() { kill "$LVPID" 2>/dev/null || true; wait "$LVPID" 2>/dev/null || true; }
# attacks MODE NAME: the untrusted attacks and the trusted probe on $DISPLAY's screen
attacks() {
  local mode=$1 name=$2 out
  out=$("$ATK" getimage)
  if [ "$mode" = deny ]; then
    expect "$name: untrusted GetImage of the root refused" "$out" err -eq 10 red_max -eq 0
  else
    expect "$name: untrusted GetImage of the root: 0 red, visible secure area black" "$out" red_max -eq 0 black_min -eq $VIS
  fi
  out=$("$ATK" getimage "$L_S"); expect "$name: untrusted GetImage of the victim: 0 red" "$out" red_max -eq 0
  out=$("$ATK" copyarea); expect "$name: untrusted CopyArea root -> pixmap: 0 red" "$out" red_max -eq 0
  out=$("$ATK" render); expect "$name: untrusted RENDER Composite of the root: 0 red" "$out" red_max -eq 0
  out=$("$ATK" chprop); expect "$name: ChangeProperty does not crash the server" "$out" err -eq 0
  out=$("$ATK" untag "$L_S"); expect "$name: another client cannot remove the tag" "$out" delete_err -eq 10 change_err -eq 10 tag -eq 1
  out=$("$ATKT" getimage); expect "$name: trusted probe reads the secure window" "$out" red_max -eq $VIS
}

########## (a) three generations without -noreset ##########
for mode in censor deny; do
  mod_conf "$TMP/R$mode.conf" "$TRUST" "Option \"Mode\" \"$mode\""
  XORG_NORESET=0 start_xorg "R$mode" "$TMP/R$mode.conf"
  n="R$mode"; log=LOG_$n; log=${!log}; d=XDISPLAY_$n; export DISPLAY=${!d}; pid=$(xpid)
  for g in 1 2 3; do
    wait_log "$log" "CAPTURESHIELD: server generation $g:" 1 &&
      ok "$mode, generation $g: the module initialised again" || bad "$mode: no generation $g line"
    victim_atk
    attacks "$mode" "$mode, generation $g"
    stop_victim_atk         # the last client leaves: the server resets
    wait_log "$log" "CAPTURESHIELD: screen 0 closed, [0-9][0-9]* screen procs restored" "$g" &&
      grep -q "closing down (server generation $g): [0-9][0-9]* request vectors restored" "$log" &&
      ok "$mode, generation $g: every wrapper restored at the reset" ||
      bad "$mode, generation $g: no close-down lines"
    kill -0 "$pid" 2>/dev/null && ok "$mode, generation $g: the server survived the reset" ||
      bad "$mode, generation $g: the server died"
  done
done

########## (b) two screens (and two generations of them) ##########
# write_conf2 FILE: two dummy devices and screens in one ServerLayout (:N.0 and :N.1)
write_conf2() {
  mod_conf "$1" "$TRUST"
  sed -i '/^Section "Device"/,$d' "$1"
  local i
  for i in 0 1; do
    cat >>"$1" <<EOF
Section "Device"
  Identifier "dev$i"
  Driver "dummy"
  VideoRam 32768
EndSection
Section "Monitor"
  Identifier "mon$i"
  HorizSync 5.0 - 1000.0
  VertRefresh 5.0 - 200.0
  Modeline "800x600" 38.25 800 832 912 1024 600 603 607 624 -hsync +vsync
EndSection
Section "Screen"
  Identifier "scr$i"
  Device "dev$i"
  Monitor "mon$i"
  DefaultDepth 24
  SubSection "Display"
    Depth 24
    Modes "800x600"
    Virtual 800 600
  EndSubSection
EndSection
EOF
  done
  cat >>"$1" <<EOF
Section "ServerLayout"
  Identifier "two"
  Screen 0 "scr0"
  Screen 1 "scr1" RightOf "scr0"
EndSection
EOF
}
write_conf2 "$TMP/T.conf"
XORG_NORESET=0 start_xorg T "$TMP/T.conf"
pid=$(xpid)
for g in 1 2; do
  wait_log "$LOG_T" "CAPTURESHIELD: server generation $g: .* on 2 screen(s)" 1 &&
    ok "two screens, generation $g: the module is active on 2 screens" || bad "two screens: no generation $g line"
  # both victims at once: the server resets when the last one leaves
  for s in 0 1; do
    export DISPLAY=$XDISPLAY_T.$s
    victim_atk
    [ "$L_screen" = "$s" ] && ok "victim on screen $s" || bad "victim on screen $L_screen, wanted $s"
    eval "T_S$s=\$L_S T_P$s=\$LVPID"
  done
  for s in 1 0; do
    export DISPLAY=$XDISPLAY_T.$s
    L_S=$(eval echo "\$T_S$s")
    attacks censor "two screens, gen $g, victim on screen $s"
  done
  kill "$T_P0" "$T_P1" 2>/dev/null || true; wait "$T_P0" "$T_P1" 2>/dev/null || true
  wait_log "$LOG_T" "CAPTURESHIELD: screen 1 closed, [0-9][0-9]* screen procs restored" "$g" &&
    ok "two screens, generation $g: both screens' procs restored" || bad "two screens: screen 1 not closed"
done
kill -0 "$pid" 2>/dev/null && ok "two screens: the server survived two resets" || bad "two screens: server died"

########## (c) a failed init: the module is wholly inactive ##########
# the same requests on a server without the module
write_conf "$TMP/B.conf" 0
start_xorg B "$TMP/B.conf"
export DISPLAY=$XDISPLAY_B
victim_atk
ref=""
for k in getimage copyarea render; do ref+="$k:$("$ATK" $k) "; done
ref+="untag:$("$ATK" untag "$L_S")"
stop_victim_atk
expect "control: without the module the attacks get the secret" "$(echo "$ref" | sed 's/.*getimage://')" red_max -eq $VIS
for step in trust region hooks censor defences input ext; do
  mod_conf "$TMP/F$step.conf" "$TRUST" "Option \"FailInit\" \"$step\""
  XORG_NORESET=0 start_xorg "F$step" "$TMP/F$step.conf"
  n="F$step"; log=LOG_$n; log=${!log}; d=XDISPLAY_$n; export DISPLAY=${!d}; pid=$(xpid)
  for g in 1 2; do
    wait_log "$log" "CAPTURESHIELD: initialisation failed at step $step, NOT active" "$g" &&
      ! grep -q "CAPTURESHIELD: active" "$log" &&
      ok "FailInit $step, generation $g: the log says NOT active" || bad "FailInit $step: log lines"
    victim_atk
    got=""
    for k in getimage copyarea render; do got+="$k:$("$ATK" $k) "; done
    got+="untag:$("$ATK" untag "$L_S")"
    [ "$got" = "$ref" ] && ok "FailInit $step, generation $g: requests answer as without the module" ||
      bad "FailInit $step: [$got] vs [$ref]"
    out=$("$PROBE" proto version 2>&1 || true)
    case $out in *"no CAPTURESHIELD"*) ok "FailInit $step: no CAPTURESHIELD extension";;
      *) bad "FailInit $step: extension present [$out]";; esac
    stop_victim_atk
  done
  grep -q "undone: 0 request vectors" "$log" && [ "$step" != trust ] &&
    bad "FailInit $step: nothing undone?" || true
  kill -0 "$pid" 2>/dev/null && ok "FailInit $step: the server survived a reset" || bad "FailInit $step: server died"
done

########## (d) blanking allocations fail: black or BadAlloc ##########
for mode in censor deny; do
  mod_conf "$TMP/M$mode.conf" "$TRUST" 'Option "FailAlloc" "1"' "Option \"Mode\" \"$mode\""
  start_xorg "M$mode" "$TMP/M$mode.conf"
  d=XDISPLAY_M$mode; export DISPLAY=${!d}
  victim_atk
  out=$("$ATK" getimage); expect "FailAlloc $mode: untrusted GetImage of the root: 0 red" "$out" red_max -eq 0
  out=$("$ATK" getimage "$L_S"); expect "FailAlloc $mode: untrusted GetImage of the victim: 0 red" "$out" red_max -eq 0
  for k in copyarea render; do
    out=$("$ATK" $k)
    if [ "$mode" = deny ]; then
      expect "FailAlloc deny: untrusted $k refused" "$out" err -eq 10 red_max -eq 0
    else
      expect "FailAlloc censor: untrusted $k: BadAlloc" "$out" err -eq 11 red_max -eq 0
    fi
  done
  out=$("$TPROBE" capture getimage 1); expect "FailAlloc $mode: trusted probe still reads" "$out" red_max -eq $VIS
  stop_victim_atk
done
# positive control: the same server with the read rules off gets the secret
mod_conf "$TMP/Mc.conf" "$TRUST" 'Option "FailAlloc" "1"' 'Option "DisableRules" "getimage,copyarea,render"'
start_xorg Mc "$TMP/Mc.conf"
export DISPLAY=$XDISPLAY_Mc
victim_atk
for k in getimage copyarea render; do
  out=$("$ATK" $k); expect "control: FailAlloc with the rules off: $k gets the secret" "$out" red_max -eq $VIS
done
stop_victim_atk

summary
