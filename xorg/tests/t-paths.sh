#!/usr/bin/env bash
# CaptureShield Xorg tests: every capture path (core, MIT-SHM, RENDER, XYPixmap planes,
# NameWindowPixmap; xwd, import, scrot, maim, ffmpeg), N captures each (CS_CAPTURES, 100), in
# censor mode (black where a secure window shows, the rest intact), in deny mode (refused), and
# on a server without the module, where each leaks; the module's log lines and a plain Load
# without options. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
N=${CS_CAPTURES:-100}           # captures per path
for b in "$PROBE" "$OUT/csprobe-trusted" "$COUNT" "$OUT/libcaptureshield.so"; do
  [ -x "$b" ] || [ -f "$b" ] || { echo "Error: $b not built (make xorg-module)" >&2; exit 1; }
done

# Servers: A censor (default mode), D deny, B without the module (shows each path leaks
# when nothing stops it), E the module loaded without options.
TRUST="Option \"Trust\" \"$TPROBE:/nonexistent/picom\""
# server A trusts the probe through a symlink: the module resolves it (/proc/PID/exe is resolved)
ln -s "$TPROBE" "$TMP/trusted-link"
mod_conf "$TMP/A.conf" "Option \"Trust\" \"$TMP/trusted-link:/nonexistent/picom\""
mod_conf "$TMP/D.conf" "$TRUST" 'Option "Mode" "deny"'
write_conf "$TMP/B.conf" 0
# A logs at verbosity 5: the module's "resource hook armed/disarmed" lines. A runs without
# the SECURITY extension, whose resource callback is otherwise always registered: there the
# module's arming creates and deletes the XACE callback list itself (the others keep it)
start_xorg A "$TMP/A.conf" -logverbose 5 -extension SECURITY
start_xorg D "$TMP/D.conf"
start_xorg B "$TMP/B.conf"

echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, no module $XDISPLAY_B (module: ${CS_MODDIR:-$OUT})"
grep -q "CAPTURESHIELD: active, mode censor" "$LOG_A" && ok "log line: active, mode censor" || bad "log line (censor)"
grep -q "CAPTURESHIELD: Trust entry $TMP/trusted-link resolves to $(realpath "$TPROBE")" "$LOG_A" &&
  ok "log line: a symlinked Trust entry is resolved" || bad "no resolved Trust entry in the log"
grep -q "CAPTURESHIELD: active, mode deny" "$LOG_D" && ok "log line: active, mode deny" || bad "log line (deny)"
OUT=${CS_MODDIR:-$OUT} write_conf "$TMP/E.conf" load
start_xorg E "$TMP/E.conf"
grep -q "CAPTURESHIELD: active, mode censor, 0 trusted" "$LOG_E" && ok "Load \"captureshield\" without options: active, censor" || bad "plain Load"
DISPLAY=$XDISPLAY_E "$PROBE" proto version >/dev/null && ok "CAPTURESHIELD extension answers QueryVersion (plain Load)" || bad "QueryVersion (plain Load)"
if grep -q "CAPTURESHIELD" "$LOG_B"; then bad "server without module mentions CAPTURESHIELD"; else ok "server B runs without the module"; fi
VIS=37500   # visible part of the 200x200 secure window: the blue 100x100 window covers 50x50 of it
BLUEPX=10000

########## censor mode: every path, N captures each ##########
export DISPLAY=$XDISPLAY_A
start_victim
for k in getimage shmget copyarea render shmpixmap; do
  out=$("$PROBE" capture $k "$N")
  expect "censor $k root x$N: 0 secret pixels, black = visible secure area, blue window intact" "$out" \
    frames -eq "$N" refused -eq 0 red_max -eq 0 black_min -eq $VIS black_max -eq $VIS blue_min -eq $BLUEPX
done
out=$("$PROBE" capture copyplane "$N")
expect "censor copyplane root x$N: 0 secret pixels" "$out" frames -eq "$N" red_max -eq 0
out=$("$PROBE" capture xyplane "$N")
expect "censor XYPixmap GetImage (red plane) root x$N: 0 secret bits" "$out" frames -eq "$N" red_max -eq 0
out=$("$TPROBE" capture xyplane 1)
expect "trusted XYPixmap GetImage (red plane) root" "$out" red_max -eq $VIS
out=$("$PROBE" capture getimage "$N" "$V_S")
expect "censor getimage on the secure window x$N: all black" "$out" frames -eq "$N" red_max -eq 0 black_min -eq 40000
out=$("$PROBE" capture shmget "$N" "$V_S")
expect "censor shmget on the secure window x$N: all black" "$out" frames -eq "$N" red_max -eq 0 black_min -eq 40000
out=$("$PROBE" capture namepixmap "$N" "$V_S")
expect "censor NameWindowPixmap of the secure window x$N: refused" "$out" refused -eq "$N" red_max -eq 0
grep -q "untrusted client .* redirects windows" "$LOG_A" && ok "log line: untrusted client redirects windows" || bad "no redirect log line"
for k in getimage shmget copyarea render shmpixmap copyplane; do
  out=$("$TPROBE" capture $k 1)
  expect "trusted $k root: reads every secret pixel" "$out" red_max -eq $VIS
done
out=$("$TPROBE" capture getimage 1 "$V_S")
expect "trusted getimage on the secure window (the covered part comes back black from the core)" "$out" red_max -eq $VIS black_min -eq 2500
[ "${V_OWN:-}" = "$VIS" ] && ok "the owner reads its own secure window ($V_OWN red)" || bad "owner read ${V_OWN:-none} red"
out=$("$PROBE" attack render-other root)
expect "RENDER Trapezoids and CreateCursor from a root picture: BadAccess" "$out" trapezoids_err -eq 10 cursor_err -eq 10
out=$("$PROBE" capture getimage 1 "$V_A")
expect "censor getimage on the plain window above: untouched" "$out" blue_min -eq $BLUEPX black_max -eq 0

# external tools
t0=$(date +%s)
for i in $(seq "$N"); do xwd -root -silent >"$TMP/root$i.xwd"; done
out=$("$COUNT" xwd "$TMP"/root*.xwd || true); rm -f "$TMP"/root*.xwd
expect "xwd -root x$N" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $VIS black_max -eq $VIS blue_min -eq $BLUEPX
for i in $(seq "$N"); do xwd -id "$V_S" -silent >"$TMP/win$i.xwd"; done
out=$("$COUNT" xwd "$TMP"/win*.xwd || true); rm -f "$TMP"/win*.xwd
expect "xwd -id x$N" "$out" frames -eq "$N" red_max -eq 0
for i in $(seq "$N"); do import -window root -depth 8 "ppm:$TMP/imp$i.ppm"; done
out=$("$COUNT" ppm "$TMP"/imp*.ppm || true); rm -f "$TMP"/imp*.ppm
expect "import -window root x$N" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $VIS blue_min -eq $BLUEPX
for i in $(seq "$N"); do scrot -o "$TMP/scrot$i.ppm"; done
out=$("$COUNT" ppm "$TMP"/scrot*.ppm || true); rm -f "$TMP"/scrot*.ppm
expect "scrot x$N" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $VIS blue_min -eq $BLUEPX
for i in $(seq "$N"); do maim -u -f bmp "$TMP/maim$i.bmp"; done
out=$("$COUNT" bmp "$TMP"/maim*.bmp || true); rm -f "$TMP"/maim*.bmp
expect "maim x$N" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $VIS blue_min -eq $BLUEPX
ffmpeg -loglevel error -f x11grab -draw_mouse 0 -video_size 800x600 -framerate 50 -i "$DISPLAY" \
  -frames:v "$N" -f rawvideo -pix_fmt rgb24 "$TMP/ff.raw"
out=$("$COUNT" raw 800 600 "$TMP/ff.raw" || true); rm -f "$TMP/ff.raw"
expect "ffmpeg x11grab $N frames (first included)" "$out" frames -eq "$N" red_max -eq 0 black_min -eq $VIS blue_min -eq $BLUEPX
echo "# external tools took $(( $(date +%s) - t0 )) s"
stop_victim

# a secure window moving and resizing while captured in a tight loop
start_victim --mover
out=$("$PROBE" capture getimage 300); expect "moving secure window: 300 root GetImages" "$out" frames -eq 300 red_max -eq 0
out=$("$PROBE" capture copyarea 300); expect "moving secure window: 300 root CopyAreas" "$out" frames -eq 300 red_max -eq 0
stop_victim

########## deny mode ##########
export DISPLAY=$XDISPLAY_D
start_victim
for k in getimage shmget copyarea copyplane render shmpixmap; do
  out=$("$PROBE" capture $k "$N")
  expect "deny $k root x$N: refused" "$out" frames -eq "$N" refused -eq "$N" red_max -eq 0
  out=$("$TPROBE" capture $k 1)
  expect "deny mode, trusted $k root" "$out" red_max -eq $VIS
done
out=$("$PROBE" capture getimage "$N" "$V_S"); expect "deny getimage on the secure window x$N" "$out" refused -eq "$N"
out=$("$PROBE" capture namepixmap "$N" "$V_S"); expect "deny NameWindowPixmap x$N" "$out" refused -eq "$N"
out=$("$PROBE" capture getimage 1 "$V_A"); expect "deny mode: a read with no secure area succeeds" "$out" refused -eq 0 blue_min -eq $BLUEPX
out=$("$PROBE" proto version); expect "QueryVersion reports deny" "$out" mode -eq 1
refusedn=0
for i in $(seq 10); do xwd -root -silent >"$TMP/d.xwd" 2>/dev/null || refusedn=$((refusedn + 1)); done
[ "$refusedn" -eq 10 ] && ok "deny: xwd -root refused 10 of 10" || bad "deny: xwd -root refused $refusedn of 10"
"$TPROBE" listen 1 >"$TMP/events2" &
LPID=$!; BG_PIDS+=("$LPID")
for i in $(seq 50); do grep -q ready "$TMP/events2" && break; sleep 0.1; done
"$PROBE" capture getimage 1 >/dev/null
for i in $(seq 50); do grep -q event "$TMP/events2" && break; sleep 0.1; done
out=$(grep event "$TMP/events2" || echo none)
expect "CaptureNotify (denied GetImage)" "$out" kind -eq 1 major -eq 73
kill "$LPID" 2>/dev/null || true
stop_victim

########## without the module every path leaks (the tests above would fail) ##########
export DISPLAY=$XDISPLAY_B
start_victim
for k in getimage shmget copyarea render shmpixmap xyplane; do
  out=$("$PROBE" capture $k 1); expect "no module: $k root leaks" "$out" red_max -eq $VIS
done
out=$("$PROBE" capture namepixmap 1 "$V_S"); expect "no module: NameWindowPixmap leaks" "$out" red_max -gt 0
out=$("$PROBE" attack reuse-id "$V_S"); expect "no module: a window inside the secure one (id reused) leaks" "$out" red_max -gt 0
out=$("$PROBE" attack render-other root)
expect "no module: RENDER Trapezoids and CreateCursor from a root picture work" "$out" trapezoids_err -eq 0 cursor_err -eq 0
stop_victim
start_victim --mover
out=$("$PROBE" capture getimage 300); expect "no module: moving window leaks in most frames" "$out" red_frames -gt 100
stop_victim

summary
