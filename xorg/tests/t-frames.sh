#!/usr/bin/env bash
# CaptureShield Xorg tests: a window manager's frame and title bar around a secure window
# (black with it in every capture; the title unreadable to untrusted clients), the secure
# window unmapped in, or moved out of, its frame; the same under a real window manager
# (openbox); on a server with the rules frame and title off they leak; in deny mode the title
# bar's read is refused. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
# start_openbox: a real window manager on $DISPLAY (untrusted), ready once it owns WM_S0;
# then an application maps a secure window titled "test.kdbx - KeePassXC" that openbox
# frames (sets O_S, O_F: the window and its frame)
start_openbox() {
  local i line
  mkdir -p "$TMP/home"
  HOME=$TMP/home openbox --sm-disable >"$TMP/openbox.log" 2>&1 &
  OB_PID=$!; BG_PIDS+=("$OB_PID")
  for i in $(seq 100); do [ "$("$PROBE" frame wm)" != owner=0x0 ] && break; sleep 0.1; done
  coproc OBAPP { exec "$PROBE" frame app; }
  OBAPP_PID_=$OBAPP_PID; BG_PIDS+=("$OBAPP_PID_")
  read -r -t 30 line <&"${OBAPP[0]}" || { echo "Error: openbox did not frame the window" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/O_/')"
}
stop_openbox() {
  kill "$OBAPP_PID_" "$OB_PID" 2>/dev/null || true
  wait "$OBAPP_PID_" "$OB_PID" 2>/dev/null || true
}
# until_other PROBE DRAWABLE: polls (up to 5 s) until the window manager has drawn its
# decorations where PROBE reads them (pixels neither black nor red); prints the last count
until_other() {
  local i out
  for i in $(seq 50); do
    out=$("$1" frame shot "$2")
    [ "$(fld "$out" other)" -gt 0 ] && break
    sleep 0.1
  done
  echo "$out"
}


for b in "$PROBE" "$OUT/csprobe-trusted" "$COUNT" "$OUT/libcaptureshield.so"; do
  [ -x "$b" ] || [ -f "$b" ] || { echo "Error: $b not built (make xorg-module)" >&2; exit 1; }
done

# Servers: A censor, C with the rules frame and title off (as in t-attacks.sh, every attack
# rule off), D deny
TRUST="Option \"Trust\" \"$TPROBE:/nonexistent/picom\""
# server A trusts the probe through a symlink: the module resolves it (/proc/PID/exe is resolved)
ln -s "$TPROBE" "$TMP/trusted-link"
mod_conf "$TMP/A.conf" "Option \"Trust\" \"$TMP/trusted-link:/nonexistent/picom\""
mod_conf "$TMP/C.conf" "$TRUST" 'Option "DisableRules" "forcedbg,property,pixmap,namewindowpixmap,dbe,daemon,frame,title,overlay,ownsecure,resources,stale,taint"'
mod_conf "$TMP/D.conf" "$TRUST" 'Option "Mode" "deny"'
# A logs at verbosity 5: the module's "resource hook armed/disarmed" lines. A runs without
# the SECURITY extension, whose resource callback is otherwise always registered: there the
# module's arming creates and deletes the XACE callback list itself (the others keep it)
start_xorg A "$TMP/A.conf" -logverbose 5 -extension SECURITY
start_xorg C "$TMP/C.conf"
start_xorg D "$TMP/D.conf"
echo "# servers: censor $XDISPLAY_A, rules-off $XDISPLAY_C, deny $XDISPLAY_D (module: ${CS_MODDIR:-$OUT})"

VIS=37500   # visible part of the 200x200 secure window: the blue 100x100 window covers 50x50 of it
BLUEPX=10000
N=${CS_CAPTURES:-100}           # captures per path

export DISPLAY=$XDISPLAY_A
# rule frame: a window manager's frame around a secure window. The victim runs a
# window manager (SubstructureRedirect on the root, WM_S0) that frames the red secure S in
# a yellow frame F1 with a title bar T1, and a blue plain P in a cyan frame F2
FRAME1=45696  # F1: 204x224, the secure window's 200x200 at 2,22 inside
YEL=5696      # F1 minus S
TBAR=4080     # T1: 204x20
CYANPX=2896   # F2 (104x124) minus P
start_victim --framed
# rule wmtitle: a window manager reads titles only when trusted (this one is not; t-recprop.sh)
[ "${V_WMTITLE:-}" = 0 ] && ok "frame: an untrusted window manager reads none of the secure window's title" ||
  bad "frame: the untrusted window manager read ${V_WMTITLE:-none} bytes of the title"
out=$("$PROBE" frame shot); expect "frame: untrusted root GetImage: frame and title bar black with the secure window, the plain frame intact" "$out" \
  red -eq 0 yellow -eq 0 black -eq $FRAME1 cyan -eq $CYANPX blue -eq $BLUEPX
for i in $(seq "$N"); do xwd -root -silent >"$TMP/fr$i.xwd"; done
out=$("$COUNT" xwd "$TMP"/fr*.xwd || true); rm -f "$TMP"/fr*.xwd
expect "frame: xwd -root x$N: black exactly the frame" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $FRAME1 black_max -eq $FRAME1 blue_min -eq $BLUEPX
out=$("$TPROBE" frame shot); expect "frame: trusted root GetImage sees the window and its frame" "$out" red -eq 40000 yellow -eq $YEL
out=$("$PROBE" frame shot "$V_T1"); expect "frame: untrusted GetImage of the title bar window: black" "$out" err -eq 0 yellow -eq 0 black -eq $TBAR
out=$("$PROBE" frame title "$V_S"); expect "title: untrusted GetProperty WM_NAME, _NET_WM_NAME of the secure window: empty" "$out" wm_name -eq 0 net_wm_name -eq 0
out=$("$TPROBE" frame title "$V_S"); expect "title: trusted GetProperty reads the title" "$out" wm_name -eq 21 net_wm_name -eq 21
out=$("$PROBE" frame title "$V_P"); expect "title: a plain window's title stays readable" "$out" wm_name -eq 12 net_wm_name -eq 12
out=$("$PROBE" frame attack "$V_F2"); expect "frame: an untrusted client's own secure window reparented into another frame blacks only itself" "$out" \
  reparent_err -eq 0 cyan -eq $((CYANPX - 100)) blue -eq $BLUEPX yellow -eq 0
out=$("$PROBE" frame attack "$V_P"); expect "frame: the same into the plain client window" "$out" \
  reparent_err -eq 0 cyan -eq $CYANPX blue -eq $((BLUEPX - 100)) yellow -eq 0
out=$("$PROBE" frame unmap "$V_S"); out=$("$PROBE" frame shot)
expect "frame: secure window unmapped inside its mapped frame (shaded): the frame stays black" "$out" red -eq 0 yellow -eq 0 black -eq $FRAME1
out=$("$PROBE" frame move "$V_S" 580 380); out="$out $("$PROBE" frame shot)"
expect "frame: another client moves the secure window out of its frame: the frame (with the title) stays black" "$out" err -eq 0 red -eq 0 yellow -eq 0 black -eq $FRAME1
stop_victim
# the same with a real window manager: openbox (untrusted) frames the secure window and
# draws its frame; it reads no title (a window manager does only when trusted), captures see nothing
start_openbox
out=$(until_other "$TPROBE" "$O_F")
expect "openbox: the trusted client sees the window and openbox's decorations" "$out" red -eq 40000 other -gt 0
out=$("$PROBE" frame shot "$O_F")
obframe=$(fld "$out" pixels)
expect "openbox: untrusted GetImage of the frame: all black" "$out" err -eq 0 red -eq 0 nonblack -eq 0 black -eq "$obframe" black -gt 40000
out=$("$PROBE" frame shot)
expect "openbox: untrusted GetImage of the root: black exactly the frame ($obframe pixels)" "$out" red -eq 0 black -eq "$obframe"
out=$("$PROBE" frame title "$O_S"); expect "openbox: untrusted GetProperty of the title: empty" "$out" wm_name -eq 0 net_wm_name -eq 0
stop_openbox

########## the same with the rules off: each leaks ##########
export DISPLAY=$XDISPLAY_C
start_victim --framed
out=$("$PROBE" frame shot); expect "rule frame off: the title bar leaks" "$out" red -eq 0 yellow -eq $YEL black -eq 40000
out=$("$PROBE" frame shot "$V_T1"); expect "rule frame off: GetImage of the title bar window leaks" "$out" yellow -eq $TBAR
out=$("$PROBE" frame title "$V_S"); expect "rule title off: the secure window's title is readable" "$out" wm_name -eq 21 net_wm_name -eq 21
out=$("$PROBE" frame unmap "$V_S"); out=$("$PROBE" frame shot)
expect "rule frame off: the frame of an unmapped secure window leaks" "$out" yellow -eq $FRAME1
out=$("$PROBE" frame move "$V_S" 580 380); out="$out $("$PROBE" frame shot)"
expect "rule frame off: the frame the secure window was moved out of leaks" "$out" err -eq 0 yellow -eq $FRAME1
stop_victim
start_openbox
out=$(until_other "$PROBE" "$O_F")
expect "rule frame off: openbox's decorations (title bar) leak to an untrusted GetImage" "$out" red -eq 0 other -gt 0
stop_openbox

########## deny mode ##########
export DISPLAY=$XDISPLAY_D
start_victim --framed
out=$("$PROBE" frame shot "$V_T1"); expect "deny: GetImage of the secure window's title bar refused" "$out" err -eq 10
out=$("$PROBE" frame shot "$V_F2"); expect "deny: GetImage of the plain window's frame works" "$out" err -eq 0 cyan -eq $CYANPX blue -eq $BLUEPX
stop_victim

summary
