#!/usr/bin/env bash
# CaptureShield demo: a secret window, a real screen recorder, the daemon in between.
# Uses your desktop when DISPLAY works, else a private Xvfb. Writes PNGs and report.md
# to ./demo-out (DEMO_OUT to change).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHIELDCTL:-$root/.build/release/shieldctl}
out=${DEMO_OUT:-$root/demo-out}
[ -x "$bin" ] || { echo "Error: $bin is missing; run 'make demo' (it builds it)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.png "$out"/report.md "$out"/daemon.log "$out"/frames-*.ppm
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

if [ -n "${DISPLAY:-}" ] && xdpyinfo >/dev/null 2>&1; then
  where="your desktop (DISPLAY=$DISPLAY)"
else
  fifo=$(mktemp -u); mkfifo "$fifo"
  Xvfb -displayfd 5 -nolisten tcp -noreset -screen 0 1024x768x24 5>"$fifo" 2>/dev/null &
  pids+=($!)
  read -r -t 15 num <"$fifo" || { echo "Error: Xvfb did not start" >&2; exit 1; }
  rm -f "$fifo"
  export DISPLAY=":$num"
  where="a private Xvfb (DISPLAY=$DISPLAY, 1024x768) because no desktop was reachable"
fi

ms() { date +%s%3N; }
red() {  # number of pure-red (secret) pixels in an image
  convert "$1" -alpha off -define histogram:unique-colors=true -format %c histogram:info:- 2>/dev/null \
    | awk '/#FF0000/ {gsub(":","",$1); n+=$1} END {print n+0}'
}
say() { printf '%s\n' "$*"; printf '%s\n' "$*" >>"$out/report.md"; }
colour() {  # colour(IMAGE, RRGGBB[, WxH+X+Y]): pixels of exactly that colour (in the crop)
  convert "$1" ${3:+-crop "$3" +repage} -alpha off -define histogram:unique-colors=true -format %c histogram:info:- \
    2>/dev/null | awk -v c="#$2" 'index($0, c) {gsub(":","",$1); n+=$1} END {print n+0}'
}
# view_window DISPLAY GEOMETRY FILE: the seed's case, a bank window (green) whose balance
# (a 160x40 red view at 80,60) is its only secure part, declared in _CAPTURE_SHIELD_VIEWS
view_window() {
  DISPLAY=$1 "$bin" test-window --color 2e7d32 --title "Online banking" --class DemoBankView \
    --geometry "$2" --view 160x40+80+60 --view-color ff0000 --print-id >"$3" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$3" ] && break; sleep 0.05; done
}

echo "# CaptureShield demo report" >"$out/report.md"
say ""
say "- Date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), machine: $(uname -sm), $(nproc) cores"
say "- Display: $where"

# 1. The secret window (pure red, so leaked pixels are easy to count), tagged by the CLI.
"$bin" test-window --color ff0000 --title "Online banking - balance 12,345.67" --class DemoBank \
  --geometry 400x260+150+120 --print-id >"$out/window.txt" &
pids+=($!)
for _ in $(seq 100); do [ -s "$out/window.txt" ] && break; sleep 0.05; done
win=$(head -1 "$out/window.txt")
say "- Secret window: $win, 400x260 = 104000 pixels of pure red (#FF0000)"

xwd -root -silent | convert xwd:- "$out/1-without-captureshield.png"
say ""
say "## 1. Without CaptureShield"
say "A screenshot (xwd -root) shows **$(red "$out/1-without-captureshield.png") secret pixels** (1-without-captureshield.png)."

# 2. Tag it and start the daemon (shield only while someone captures).
cat >"$out/policy.json5" <<'POLICY'
// Demo policy: shield secure windows only while a capture session is live.
{ version: 1, capture: { linger: "1s" }, shield: { when: "capturing" } }
POLICY
chmod 644 "$out/policy.json5"
"$bin" tag "$win" >/dev/null
"$bin" watch --policy "$out/policy.json5" --log-format json 2>"$out/daemon.log" &
daemon=$!; pids+=($daemon)
for _ in $(seq 100); do "$bin" status >/dev/null 2>&1 && break; sleep 0.05; done
say ""
say "## 2. Daemon running, window tagged, nobody capturing"
say '```'
"$bin" list | tee -a "$out/report.md"
say '```'

# 3. A real screen recorder: ffmpeg x11grab, 3 seconds at 10 fps.
say ""
say "## 3. A screen recorder starts (ffmpeg -f x11grab, 3 s at 10 fps)"
t0=$(ms)
ffmpeg -loglevel error -f x11grab -framerate 10 -video_size 1024x768 -i "$DISPLAY" -t 3 \
  -f image2 "$out/frames-%03d.ppm" &
ff=$!
sleep 1.5
"$bin" status >"$out/status-during.txt" 2>&1 || true
wait $ff
t1=$(ms)
frames=0; leaked=0; worst=0
for f in "$out"/frames-*.ppm; do
  n=$(red "$f"); frames=$((frames + 1)); [ "$n" -gt 0 ] && leaked=$((leaked + 1)); [ "$n" -gt "$worst" ] && worst=$n
done
mid=$(ls "$out"/frames-*.ppm | sed -n "$(( (frames + 1) / 2 ))p")
convert "$mid" "$out/2-while-recording.png"
rm -f "$out"/frames-*.ppm
say "ffmpeg recorded **$frames frames in $((t1 - t0)) ms; $leaked of them contain secret pixels** (most in one frame: $worst)."
say "A middle frame: 2-while-recording.png. \`shieldctl status\` while it recorded:"
say '```'
cat "$out/status-during.txt" >>"$out/report.md"; cat "$out/status-during.txt"
say '```'

# 4. After the recorder exits, the shield drops after capture.linger.
for _ in $(seq 100); do "$bin" list 2>/dev/null | grep -q "$win.*no" && break; sleep 0.05; done
say ""
say "## 4. Recorder gone"
say '```'
"$bin" list | tee -a "$out/report.md"
say '```'
unshield_at=$(grep '"event":"unshield"' "$out/daemon.log" | tail -1 | sed -E 's/.*"time":"([^"]*)".*/\1/')
say "The shield dropped $(( $(date -d "$unshield_at" +%s%3N) - t1 )) ms after ffmpeg exited (capture.linger = 1 s, from the daemon's unshield record): the user sees the window again."

iso_ms() { date -d "$1" +%s%3N; }
at() { grep "\"event\":\"$1\"" "$out/daemon.log" | head -1 | sed -E 's/.*"time":"([^"]*)".*/\1/'; }
say ""
say "Reaction: ffmpeg was launched at t=0; the daemon started a session for it at +$(( $(iso_ms "$(at session-start)") - t0 )) ms (ClientStarted, identified as /usr/bin/ffmpeg, a known capturer), the shield was up at +$(( $(iso_ms "$(at shield)") - t0 )) ms, and ffmpeg's first capture request ($(grep '"event":"capture-request"' "$out/daemon.log" | head -1 | sed -E 's/.*"request":"([^"]*)".*/\1/')) came at +$(( $(iso_ms "$(at capture-request)") - t0 )) ms: after the shield."

# 5. A one-shot screenshot tool, not a known capturer: detected by its request.
say ""
say "## 5. A one-shot screenshot (xwd -root), not in the known list"
xwd -root -silent | convert xwd:- "$out/3-xwd-first.png"
sleep 0.2
xwd -root -silent | convert xwd:- "$out/4-xwd-second.png"
say "First xwd: **$(red "$out/3-xwd-first.png") secret pixels** (3-xwd-first.png): detection is not prevention, its GetImage is seen as it runs (set capture.quarantine, or shield.when \"always\", to stop a tool's very first frame)."
say "Second xwd 0.2 s later, inside capture.linger: **$(red "$out/4-xwd-second.png") secret pixels** (4-xwd-second.png)."
say '```'
"$bin" clients 2>&1 | tee -a "$out/report.md" || true
say '```'

# 5b. A secure view: only the balance of a window is secret.
say ""
say "## 5b. A secure view: the balance, not the whole window"
view_window "$DISPLAY" 320x160+600+120 "$out/view-window.txt"
vwin=$(head -1 "$out/view-window.txt")
for _ in $(seq 100); do "$bin" list 2>/dev/null | grep -q "views (app)" && break; sleep 0.05; done
xwd -root -silent >/dev/null   # a capture session starts (this first shot is not counted)
for _ in $(seq 100); do "$bin" list 2>/dev/null | grep "$vwin" | grep -q yes && break; sleep 0.05; done
xwd -root -silent | convert xwd:- "$out/4b-view-xwd.png"
convert "$out/4b-view-xwd.png" -crop 320x160+600+120 +repage "$out/4c-view-window.png"
say "A window ($vwin, 320x160, green) whose balance, a 160x40 rectangle (6400 red pixels), is declared in _CAPTURE_SHIELD_VIEWS by the app:"
say '```'
"$bin" list | grep -E "^WINDOW|$vwin" | tee -a "$out/report.md" || true
say '```'
say "xwd during the capture session: **$(colour "$out/4b-view-xwd.png" FF0000 320x160+600+120) of 6400 balance pixels** captured, **$(colour "$out/4b-view-xwd.png" 2E7D32 320x160+600+120) of 44800 green pixels** around it intact (4c-view-window.png): the shield covers the view only."

say ""
say "## Audit log (what the daemon decided, from its stderr)"
say '```'
grep -E '"event":"(session-start|capture-request|shield|unshield|session-end)"' "$out/daemon.log" \
  | sed -E 's/"exe":"[^"]*\/([^"/]*)"/"exe":"...\/\1"/' | tee -a "$out/report.md" || true
say '```'
kill -TERM $daemon; wait $daemon 2>/dev/null || true

# 6. Server enforcement: the same with the CaptureShield Xorg module, on a headless Xorg
# (dummy driver) of its own. Needs root, Xorg with the dummy driver and the built module;
# anything missing skips this part with a line saying why.
say ""
say "## 6. Server enforcement (the CaptureShield Xorg module)"
module_dir="$root/.build/xorg"
skip=""
[ "$(id -u)" -eq 0 ] || skip="not root (a headless Xorg needs root here)"
[ -z "$skip" ] && [ -x /usr/lib/xorg/Xorg ] || skip=${skip:-"Xorg is not installed (xserver-xorg-core)"}
[ -z "$skip" ] && [ -e /usr/lib/xorg/modules/drivers/dummy_drv.so ] || skip=${skip:-"the dummy video driver is not installed (xserver-xorg-video-dummy)"}
[ -z "$skip" ] && [ -e "$module_dir/libcaptureshield.so" ] || skip=${skip:-"the module is not built (make xorg-module)"}
if [ -z "$skip" ]; then
  tmp=$(mktemp -d); OUT="$module_dir" TMP="$tmp"
  # shellcheck source=../xorg/tests/xorg-lib.sh
  . "$root/xorg/tests/xorg-lib.sh"
  trap 'stop_all_xorg; cleanup; rm -rf "$tmp"' EXIT
  # The daemon is trusted (it tags and grants); xwd plays the user's own screen (trusted
  # too, in this demo only); ffmpeg is the untrusted recorder.
  write_conf "$tmp/xorg.conf" 1 "Option \"Trust\" \"$(readlink -f "$bin"):/usr/bin/xwd\""
  if ! start_xorg DEMO "$tmp/xorg.conf" 2>"$tmp/start.err"; then
    skip="Xorg with the dummy driver did not start here ($(tail -1 "$tmp/start.err"))"
  fi
fi
if [ -n "$skip" ]; then
  say "Skipped: $skip. Sections 1-5 (client-side shields) ran."
else
  sd=$XDISPLAY_DEMO
  xsetroot -display "$sd" -solid '#3060a0'
  DISPLAY=$sd "$bin" test-window --color ff0000 --title "Online banking - balance 12,345.67" --class DemoBank \
    --geometry 400x260+150+120 --tag --print-id >"$tmp/window.txt" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$tmp/window.txt" ] && break; sleep 0.05; done
  DISPLAY=$sd "$bin" watch --log-format json 2>"$out/daemon-server.log" &
  pids+=($!)
  for _ in $(seq 100); do DISPLAY=$sd "$bin" status 2>/dev/null | grep -q "enforcement: server" && break; sleep 0.05; done
  say "A headless Xorg ($sd, 800x600, dummy driver) with the module; the same red window, tagged by its app; the daemon:"
  say '```'
  DISPLAY=$sd "$bin" status | grep -E "^(enforcement|windows|granted):" | tee -a "$out/report.md"
  say '```'
  ffmpeg -loglevel error -f x11grab -draw_mouse 0 -framerate 10 -video_size 800x600 -i "$sd" -t 3 -f image2 "$tmp/frame-%03d.ppm" &
  ff=$!
  sleep 1.5
  DISPLAY=$sd xwd -root -silent | convert xwd:- "$out/5-server-user-view.png"
  wait $ff
  frames=0; leaked=0; first=""
  for f in "$tmp"/frame-*.ppm; do
    n=$(red "$f"); frames=$((frames + 1)); [ "$n" -gt 0 ] && leaked=$((leaked + 1)); [ -z "$first" ] && first=$n
  done
  mid=$(ls "$tmp"/frame-*.ppm | sed -n "$(( (frames + 1) / 2 ))p")
  convert "$mid" "$out/6-server-ffmpeg-frame.png"
  black() { convert "$1" -alpha off -define histogram:unique-colors=true -format %c histogram:info:- 2>/dev/null \
    | awk '/#000000/ {gsub(":","",$1); n+=$1} END {print n+0}'; }
  inwin=$(convert "$mid" -crop 400x260+150+120 +repage png:- | black png:-)
  convert "$out/5-server-user-view.png" "$out/6-server-ffmpeg-frame.png" +append "$out/7-server-side-by-side.png"
  say "While ffmpeg recorded (3 s at 10 fps, untrusted), the user's own screen (xwd, trusted) showed **$(red "$out/5-server-user-view.png") of 104000 secret pixels** (5-server-user-view.png): the window stays visible."
  say "ffmpeg recorded **$frames frames; $leaked of them contain secret pixels; the first frame: $first**. A middle frame (6-server-ffmpeg-frame.png) is black in **$(black "$mid") pixels, $inwin of them inside the window's 400x260 = 104000**: black exactly where the window is, the desktop around it intact. Side by side: 7-server-side-by-side.png."
  view_window "$sd" 320x160+150+400 "$tmp/view-window.txt"
  ffmpeg -loglevel error -f x11grab -draw_mouse 0 -framerate 1 -video_size 800x600 -i "$sd" -frames:v 1 -y "$tmp/view.ppm"
  convert "$tmp/view.ppm" -crop 320x160+150+400 +repage "$out/8-server-view-window.png"
  say "The secure view under the module: ffmpeg's frame of the bank window (8-server-view-window.png) holds **$(colour "$tmp/view.ppm" FF0000 320x160+150+400) of 6400 balance pixels**, **$(colour "$tmp/view.ppm" 000000 320x160+150+400) black** where the balance is, and **$(colour "$tmp/view.ppm" 2E7D32 320x160+150+400) of 44800 green pixels** around it."
  say "The daemon audited: $(grep -c '"event":"capture-censored"' "$out/daemon-server.log") capture-censored record(s), e.g.:"
  say '```'
  grep '"event":"capture-censored"' "$out/daemon-server.log" | head -1 | tee -a "$out/report.md"
  say '```'
fi
echo
echo "Report: $out/report.md"
