#!/usr/bin/env bash
# CaptureShield Xorg tests: attacks on a secure window's pixels by another client: windows with
# background None over, under or around it, reparenting, a copy source's id reused, named
# pixmaps (tile, copy, picture; named before the tag too), DBE back buffers (the owner's, one
# allocated before the tag, after a resize, an attacker's own), and a compositor of our own
# painting inside the overlay window (the trail keeps where the secure window was black; rule
# overlay); the resource hook armed only while needed. Each again on a server with the rule
# off, where it leaks. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
# comp_run: the victim on $DISPLAY painted by a compositor of our own (trusted) from a
# window inside the overlay window; an untrusted GetImage of the root while it shows the
# victim in place, and again after the secure window moved away with its image left where
# it was. Prints "painted_red=N moved_red=M".
comp_run() {
  local fifo="$TMP/comp.in" outf="$TMP/comp.out" p1 p2 cp i
  rm -f "$fifo" "$outf"
  mkfifo "$fifo"
  start_victim
  "$TPROBE" compositor "$V_S" "$V_A" <"$fifo" >"$outf" 2>&1 &
  cp=$!
  BG_PIDS+=("$cp")
  exec 7>"$fifo"
  for i in $(seq 100); do grep -q painted "$outf" && break; sleep 0.1; done
  p1=$("$PROBE" capture getimage 1)
  echo move >&7
  for i in $(seq 100); do grep -q moved "$outf" && break; sleep 0.1; done
  p2=$("$PROBE" capture getimage 1)
  exec 7>&-
  wait "$cp" 2>/dev/null || true
  stop_victim
  echo "painted_red=$(fld "$p1" red_max) moved_red=$(fld "$p2" red_max) compositor=$(tr '\n' ',' <"$outf")"
}
# the last "resource hook armed|disarmed" of server A (the hook is registered only while
# a guarded extension request runs or a secret pixmap exists)
hook_state() { grep "CAPTURESHIELD: resource hook" "$LOG_A" | tail -1 | sed 's/.*resource hook //'; }
# wait_hook STATE: waits (up to 5 s) until server A's hook is in STATE (a client that left
# is seen by the server a little later)
wait_hook() {
  local i
  for i in $(seq 50); do [ "$(hook_state)" = "$1" ] && return 0; sleep 0.1; done
  return 1
}


for b in "$PROBE" "$OUT/csprobe-trusted" "$COUNT" "$OUT/libcaptureshield.so"; do
  [ -x "$b" ] || [ -f "$b" ] || { echo "Error: $b not built (make xorg-module)" >&2; exit 1; }
done

# Servers: A censor, C censor with the attack rules off, K and M censor with a long trail
# and none (a compositor of ours paints the screen there).
TRUST="Option \"Trust\" \"$TPROBE:/nonexistent/picom\""
# server A trusts the probe through a symlink: the module resolves it (/proc/PID/exe is resolved)
ln -s "$TPROBE" "$TMP/trusted-link"
mod_conf "$TMP/A.conf" "Option \"Trust\" \"$TMP/trusted-link:/nonexistent/picom\""
mod_conf "$TMP/C.conf" "$TRUST" 'Option "DisableRules" "forcedbg,property,pixmap,namewindowpixmap,dbe,daemon,frame,title,overlay,ownsecure,resources,stale,taint"'
# K: a trail long enough for any machine's pace; M: no trail (both: a compositor of ours)
mod_conf "$TMP/K.conf" "$TRUST" 'Option "TrailMs" "60000"'
mod_conf "$TMP/M.conf" "$TRUST" 'Option "TrailMs" "0"'
# A logs at verbosity 5: the module's "resource hook armed/disarmed" lines. A runs without
# the SECURITY extension, whose resource callback is otherwise always registered: there the
# module's arming creates and deletes the XACE callback list itself (the others keep it)
start_xorg A "$TMP/A.conf" -logverbose 5 -extension SECURITY
start_xorg C "$TMP/C.conf"
start_xorg K "$TMP/K.conf"
start_xorg M "$TMP/M.conf"
echo "# servers: censor $XDISPLAY_A, rules-off $XDISPLAY_C, trail $XDISPLAY_K, no trail $XDISPLAY_M (module: ${CS_MODDIR:-$OUT})"

VIS=37500   # visible part of the 200x200 secure window: the blue 100x100 window covers 50x50 of it
BLUEPX=10000

export DISPLAY=$XDISPLAY_A
start_victim
# attacks with every rule on
out=$("$PROBE" attack over "$V_S"); expect "attack: own bg-None window over the secure window" "$out" red_max -eq 0
out=$("$PROBE" attack over-change "$V_S"); expect "attack: own window set to background None after creation, over the secure window" "$out" red_max -eq 0
out=$("$PROBE" attack reuse-id "$V_S"); expect "copy source destroyed, its id reused for a window inside the secure one: censored" "$out" frames -eq 1 red_max -eq 0 black_min -eq 10000
out=$("$PROBE" attack under "$V_S"); expect "attack: own bg-None window under, secure window moved away" "$out" red_max -eq 0
out=$("$PROBE" attack reparent "$V_S"); expect "attack: secure window reparented into an own bg-None window" "$out" red_max -eq 0
out=$("$PROBE" attack copy-cache "$V_S"); expect "attack: copies from an own window found clear, then the secure window reparented and mapped inside it: censored" "$out" frames -eq 2 red_max -eq 0
out=$("$PROBE" attack untag "$V_S"); expect "attack: untag by another client" "$out" delete_err -eq 10 change_err -eq 10 tag -eq 1
stop_victim
start_victim --name-pixmap
[ "$(hook_state)" = armed ] && ok "a secret (named) pixmap keeps the resource hook armed" ||
  bad "resource hook not armed with a secret pixmap: $(hook_state)"
for k in tile copy picture; do
  out=$("$PROBE" attack $k "$V_PIX"); expect "attack: trusted-named pixmap via $k: refused" "$out" refused -eq 1 red_max -eq 0
done
stop_victim
wait_hook disarmed && ok "the secret pixmap gone with its owner: resource hook disarmed" ||
  bad "resource hook still $(hook_state) with no secret pixmap and no guarded request"
start_victim
out=$("$PROBE" capture copyarea 20); expect "root copies with only a secure window: censored" "$out" frames -eq 20 red_max -eq 0 black_min -eq $VIS
# the resources rule (secret.c) holds the hook while a secure window exists
[ "$(hook_state)" = armed ] && ok "a secure window arms the resource hook (its owner's resources)" ||
  bad "resource hook $(hook_state) with a secure window"
stop_victim
start_victim --name-pixmap
for k in tile copy picture; do
  out=$("$PROBE" attack $k "$V_PIX"); expect "attack, hook disarmed then re-armed by a new secret pixmap: via $k refused" "$out" refused -eq 1 red_max -eq 0
done
stop_victim
start_victim --name-then-tag
for k in copy picture; do
  out=$("$PROBE" attack $k "$V_PIX"); expect "attack: pixmap named before the window was tagged, via $k: refused" "$out" refused -eq 1 red_max -eq 0
done
stop_victim
start_victim --dbe-then-tag
out=$("$PROBE" attack dbe-read "$V_PIX"); expect "attack: the owner's DBE back buffer allocated before the window was tagged: refused" "$out" refused -eq 1 red_max -eq 0
stop_victim
start_victim --dbe
out=$("$PROBE" attack dbe-read "$V_PIX"); expect "attack: reading the owner's DBE back buffer: refused" "$out" refused -eq 1 red_max -eq 0
out=$("$PROBE" attack dbe-resize "$V_PIX" "$V_S"); expect "attack: the owner's DBE back buffer after the window was resized (reallocated): refused" "$out" refused -eq 1 red_max -eq 0
stop_victim
start_victim
out=$("$PROBE" attack dbe-alloc "$V_S"); expect "attack: own DBE back buffer on the secure window: refused" "$out" refused -eq 1 red_max -eq 0
out=$("$PROBE" attack mixed "$V_S" 20)
expect "20 DBE allocations, NameWindowPixmaps and DRI2CreateDrawables on the secure window, each after 80 ordinary requests: all refused" "$out" \
  dbe_refused -eq 20 name_refused -eq 20 dri2_refused -eq 20 red_max -eq 0
stop_victim
wait_hook disarmed && ok "after the guarded requests (refused ones too), the secure window gone: the resource hook is disarmed" ||
  bad "resource hook still $(hook_state) after the guarded requests"

########## the same attacks with the rule off: each leaks ##########
export DISPLAY=$XDISPLAY_C
start_victim
out=$("$PROBE" attack over "$V_S"); expect "rule forcedbg off: window over leaks" "$out" red_max -gt 0
out=$("$PROBE" attack over-change "$V_S"); expect "rule forcedbg off: window set to background None after creation leaks" "$out" red_max -gt 0
out=$("$PROBE" attack under "$V_S"); expect "rule forcedbg off: window under leaks" "$out" red_max -gt 0
out=$("$PROBE" attack reparent "$V_S"); expect "rule forcedbg off: reparenting leaks" "$out" red_max -gt 0
out=$("$PROBE" capture namepixmap 1 "$V_S"); expect "rule namewindowpixmap off: NameWindowPixmap leaks" "$out" red_max -gt 0
out=$("$PROBE" attack untag "$V_S"); expect "rule property off: untag succeeds" "$out" delete_err -eq 0 tag -eq 0
out=$("$PROBE" policy set "$V_A" 1); expect "rule property off: an untrusted client sets the policy tag" "$out" err -eq 0
out=$("$PROBE" policy try "$V_A"); expect "rule property off: an untrusted client deletes the policy tag" "$out" delete_err -eq 0 change_err -eq 0 tag -eq 0
stop_victim
start_victim --name-pixmap
for k in tile copy picture; do
  out=$("$PROBE" attack $k "$V_PIX"); expect "rule pixmap off: named pixmap via $k leaks" "$out" red_max -gt 0
done
stop_victim
start_victim --name-then-tag
out=$("$PROBE" attack copy "$V_PIX"); expect "rule pixmap off: a pixmap named before the tag leaks" "$out" red_max -gt 0
stop_victim
start_victim --dbe-then-tag
out=$("$PROBE" attack dbe-read "$V_PIX"); expect "rule pixmap off: a DBE back buffer allocated before the tag leaks" "$out" red_max -gt 0
stop_victim
start_victim --dbe
out=$("$PROBE" attack dbe-read "$V_PIX"); expect "rule pixmap off: the owner's DBE back buffer leaks" "$out" red_max -gt 0
out=$("$PROBE" attack dbe-resize "$V_PIX" "$V_S"); expect "rule pixmap off: the owner's reallocated DBE back buffer leaks" "$out" red_max -gt 0
stop_victim
start_victim
out=$("$PROBE" attack dbe-alloc "$V_S"); expect "rule dbe off: own DBE back buffer on the secure window leaks" "$out" red_max -gt 0
out=$("$PROBE" attack mixed "$V_S" 5)
expect "rules dbe, namewindowpixmap off: the same mixed requests are allowed and leak (DRI2 still refused)" "$out" \
  dbe_refused -eq 0 name_refused -eq 0 dri2_refused -eq 5 red_max -gt 0
stop_victim

########## under a compositor of our own (GL compositors paint inside the overlay window) ##########
export DISPLAY=$XDISPLAY_K
out=$(comp_run)
expect "compositor: its window inside the overlay window covers nothing; the image it keeps where the secure window was stays black (trail)" "$out" painted_red -eq 0 moved_red -eq 0
export DISPLAY=$XDISPLAY_M
out=$(comp_run)
expect "TrailMs 0: the compositor's image where the secure window was leaks" "$out" painted_red -eq 0 moved_red -gt 0
export DISPLAY=$XDISPLAY_C
out=$(comp_run)
expect "rule overlay off: the compositor's window covers the secure one, which leaks" "$out" painted_red -gt 0

summary
