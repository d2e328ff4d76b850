#!/usr/bin/env bash
# An ordinary desktop's overhead (docs/performance.md, "Daemon CPU and overhead"): the X
# server's instructions (callgrind) for one fixed workload of real applications, driven live
# on a private Xvfb with openbox, without and with the daemon (`shieldctl watch`, the default
# policy: it follows every window because of the built-in secure list), and the workload's
# wall clock in the same run. Runs alternate without, with, ... (RUNS of each, default 3);
# the ratio is without ÷ with (instructions) and with ÷ without (wall clock: > 1 slower).
# The workload, the same in every run (SEED fixes the keys sent):
#   xterm running less on a 3,000-line file, zenity --list (GTK 3) of 2,000 rows, featherpad
#   (Qt 5) on the same file, dillo (FLTK browser) on a long local page: each started, sent 30
#   scrolling keys (Down, Page_Down, Page_Up, Up) DELAY ms apart, then closed.
# Only the workload is counted: the server's counters are zeroed after openbox (and the
# daemon) are up and dumped after the last application has exited.
# Figures, never asserted; exits non-zero if a run could not be made.
# Usage: scripts/bench-desktop.sh [path/to/shieldctl]   (RUNS=3, SEED=38, DELAY=150,
#   KEEP=1 keeps the scratch directory with the callgrind dumps and the daemon's logs;
#   for finding where the cost is: POLICY=file runs the daemon with that policy,
#   MODES="with" runs only that kind)
set -euo pipefail
shieldctl=$(realpath -m "${1:-$(dirname "$0")/../.build/release/shieldctl}")
runs=${RUNS:-3}
seed=${SEED:-38}
delay=${DELAY:-150}   # ms between keys: long enough for each key's redraw to finish
xvfb="" 
[ -x "$shieldctl" ] || { echo "bench-desktop: no shieldctl at $shieldctl" >&2; exit 1; }
for tool in valgrind callgrind_control callgrind_annotate Xvfb openbox xdotool xterm zenity featherpad dillo; do
  command -v "$tool" >/dev/null || { echo "bench-desktop: $tool missing (scripts/install-deps.sh bench)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/captureshield-deskbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "bench-desktop: kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "bench-desktop: $*" >&2; exit 1; }

# The same files, keys and environment for every run.
mkdir -m 700 "$work/run"
export NO_AT_BRIDGE=1 GDK_BACKEND=x11 QT_QPA_PLATFORM=xcb QT_ACCESSIBILITY=0
# no animations and no blinking cursors: what is drawn must not depend on the time taken
mkdir -p "$work/gtk-3.0"
printf '[Settings]\ngtk-enable-animations=false\ngtk-cursor-blink=false\n' >"$work/gtk-3.0/settings.ini"
seq 1 3000 | awk '{printf "%05d the quick brown fox jumps over the lazy dog, line %d of the file\n", $1, $1}' \
  >"$work/text.txt"
{
  echo '<html><head><title>page</title></head><body><h1>A long page</h1>'
  for i in $(seq 1 300); do
    echo "<h2>Section $i</h2><p>Paragraph $i: <b>bold</b> and <i>italic</i> text, a <a href=\"#s$i\">link</a>,"
    echo "and more words to wrap across the width of the window, some of them long enough to fold.</p>"
    echo "<table border=1><tr><td>cell $i.1</td><td>cell $i.2</td><td>cell $i.3</td></tr></table>"
  done
  echo '</body></html>'
} >"$work/page.html"
seq 1 2000 | awk '{print "row" $1; print $1 * 7}' >"$work/rows.txt"
# keys APP: this run's keys for APP, from SEED (the same in every run of the bench)
keys() {
  awk -v seed="$seed" -v app="$1" 'BEGIN {
    srand(seed + length(app)); n = 30
    for (i = 0; i < n; i++) {
      r = rand()
      if (app == "zenity") k = (r < 0.6) ? "Down" : (r < 0.9 ? "Page_Down" : "Page_Up")
      else if (app == "dillo") k = (r < 0.5) ? "Page_Down" : (r < 0.85 ? "Down" : "Up")
      else k = (r < 0.7) ? "Page_Down" : (r < 0.9 ? "Down" : "Page_Up")
      printf "%s ", k
    }
  }'
}

# window CLASS PID: waits for PID's visible window of CLASS and focuses it; prints its id
window() {
  local w=""
  for _ in $(seq 600); do
    w=$(xdotool search --onlyvisible --class "$1" 2>/dev/null | head -1) || true
    [ -n "$w" ] && break
    kill -0 "$2" 2>/dev/null || fail "$1 exited before showing a window"
    sleep 0.1
  done
  [ -n "$w" ] || fail "$1 showed no window"
  xdotool windowactivate --sync "$w" >/dev/null 2>&1 || xdotool windowfocus --sync "$w" >/dev/null 2>&1 || true
  echo "$w"
}
# finish PID: closes the app (it has had its keys) and waits for it
finish() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
# phase: dumps (and so zeroes) the server's counters: one dump per application
phase() { callgrind_control -d "$xvfb" >/dev/null 2>&1 || fail "callgrind_control -d failed"; }
# reap SID: ends what an application left behind in its session (dillo's dpid and file.dpi
# outlive dillo); the application was started with setsid, so SID is its pid
reap() {
  local p
  for p in $(ps -o pid= -s "$1" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
}
settle() { xdotool sleep 0.5 >/dev/null 2>&1; xdpyinfo >/dev/null; }

workload() {
  local p w
  # terminal: xterm running less on the text file (a flood of output would be drawn in
  # chunks that depend on timing; keys are not)
  xterm +j -geometry 100x40 -e less "$work/text.txt" &
  p=$!
  w=$(window XTerm "$p")
  settle
  # shellcheck disable=SC2046
  xdotool key --delay "$delay" $(keys xterm)
  settle
  finish "$p"
  phase
  # GTK 3: zenity's list
  # shellcheck disable=SC2046
  zenity --list --width 500 --height 600 --column row --column value $(cat "$work/rows.txt") >/dev/null 2>&1 &
  p=$!
  w=$(window Zenity "$p")
  settle
  # shellcheck disable=SC2046
  xdotool key --delay "$delay" $(keys zenity)
  settle
  finish "$p"
  phase
  # Qt 5: featherpad on a text file
  featherpad --standalone "$work/text.txt" >/dev/null 2>&1 &
  p=$!
  w=$(window featherpad "$p")
  settle
  # shellcheck disable=SC2046
  xdotool key --delay "$delay" $(keys featherpad)
  settle
  finish "$p"
  phase
  # browser: dillo on a local page
  setsid dillo -g 800x600 "file://$work/page.html" >/dev/null 2>&1 &
  p=$!
  w=$(window Dillo "$p")
  settle
  # shellcheck disable=SC2046
  xdotool key --delay "$delay" $(keys dillo)
  settle
  finish "$p"
  reap "$p"
  phase
}

# table DUMP: "instructions<TAB>file:function [object]" per function (as profile-overhead.sh)
table() {
  callgrind_annotate --threshold=100 "$1" 2>/dev/null |
    awk '/^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]/ { c = $1; gsub(",", "", c); sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, ""); print c "\t" $0 }'
}

# one MODE K: one run; writes "instructions wall_seconds" to $work/result
one() {
  local mode=$1 k=$2 out="$work/cg-$1-$2.out"
  HOME="$work/home-$mode-$k"
  mkdir -p "$HOME/.config"
  cp -r "$work/gtk-3.0" "$HOME/.config/"
  export HOME XDG_CONFIG_HOME="$HOME/.config" XDG_STATE_HOME="$HOME/.state" XDG_RUNTIME_DIR="$work/run"
  rm -f "$work/display"
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$work/display" >"$work/xvfb-$mode-$k.log" 2>&1 &
  xvfb=$!
  pids+=("$xvfb")
  for _ in $(seq 600); do [ -s "$work/display" ] && break; sleep 0.1; done
  [ -s "$work/display" ] || fail "Xvfb did not start (under callgrind)"
  export DISPLAY=":$(cat "$work/display")"
  # openbox, started again if it exits at start-up (seen under load: the server under
  # callgrind is slow)
  local wm="" try
  for try in 1 2 3; do
    openbox >>"$work/openbox-$mode-$k.log" 2>&1 &
    wm=$!
    pids+=("$wm")
    for _ in $(seq 300); do
      xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' && break 2
      kill -0 "$wm" 2>/dev/null || break
      sleep 0.1
    done
  done
  xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' && kill -0 "$wm" 2>/dev/null ||
    fail "openbox did not come up (run $mode $k; $work/openbox-$mode-$k.log)"
  local daemon=""
  if [ "$mode" = with ]; then
    "$shieldctl" watch ${POLICY:+--policy "$POLICY"} >"$work/daemon-$k.log" 2>&1 &
    daemon=$!
    pids+=("$daemon")
    for _ in $(seq 300); do "$shieldctl" status >/dev/null 2>&1 && break; sleep 0.1; done
    "$shieldctl" status >/dev/null 2>&1 || fail "the daemon did not come up (log: $work/daemon-$k.log)"
  fi
  sleep 1
  callgrind_control -z "$xvfb" >/dev/null 2>&1 || fail "callgrind_control -z failed"
  local t0 t1
  t0=$(date +%s.%N)
  workload
  t1=$(date +%s.%N)
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  kill "$wm" 2>/dev/null || true
  wait "$wm" 2>/dev/null || true
  kill "$xvfb"
  wait "$xvfb" 2>/dev/null || true
  local i ir total=0 parts=""
  for i in 1 2 3 4; do
    [ -s "$out.$i" ] || fail "no callgrind dump $i for run $mode $k"
    table "$out.$i" >>"$work/fn-$mode-$k.tsv"
    ir=$(callgrind_annotate "$out.$i" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    [ -n "$ir" ] || fail "no instruction total in $out.$i"
    total=$((total + ir))
    parts="$parts $ir"
  done
  echo "$total $(echo "$t1 - $t0" | bc -l)$parts" >"$work/result"
}

echo "an ordinary desktop (xterm with less, zenity list, featherpad, dillo; seed $seed; openbox), X server under callgrind"
echo "load average $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs, shieldctl $("$shieldctl" --version 2>/dev/null | head -1)"
printf '%-4s %-8s %14s %10s %14s %14s %14s %14s\n' run daemon "X instructions" "wall (s)" xterm zenity featherpad dillo
W=() D=() WT=() DT=()
for k in $(seq 1 "$runs"); do
  for mode in ${MODES:-without with}; do
    rm -f "$work/result"
    one "$mode" "$k"
    read -r ir wall p1 p2 p3 p4 <"$work/result"
    [ -n "${ir:-}" ] || fail "run $k $mode gave no figure"
    printf '%-4s %-8s %14s %10.1f %14s %14s %14s %14s\n' "$k" "$mode" "$ir" "$wall" "$p1" "$p2" "$p3" "$p4"
    if [ "$mode" = without ]; then W+=("$ir"); WT+=("$wall"); else D+=("$ir"); DT+=("$wall"); fi
  done
done
if [ ${#W[@]} -eq 0 ] || [ ${#D[@]} -eq 0 ]; then exit 0; fi  # MODES named one kind
echo "per run: instructions without ÷ with, wall clock with ÷ without"
for k in $(seq 0 $((runs - 1))); do
  awk -v w="${W[$k]}" -v d="${D[$k]}" -v wt="${WT[$k]}" -v dt="${DT[$k]}" -v k="$((k + 1))" \
    'BEGIN { printf "  run %d: instructions %.4f, wall clock %.3f\n", k, w / d, dt / wt }'
done
sum() { printf '%s\n' "$@" | awk '{s += $1} END {printf "%.6f", s}'; }
awk -v w="$(sum "${W[@]}")" -v d="$(sum "${D[@]}")" -v wt="$(sum "${WT[@]}")" -v dt="$(sum "${DT[@]}")" -v n="$runs" \
  'BEGIN { printf "all %d runs: X server instructions without ÷ with %.4f (goal >= 0.99); wall clock with ÷ without %.3f\n", n, w / d, dt / wt }'
echo "functions whose X server instructions grew most, per run (with - without, mean of the $runs pairs):"
cat "$work"/fn-without-*.tsv | awk -F'\t' '{s[$2] += $1} END {for (f in s) print s[f] "\t" f}' >"$work/fn-without.tsv"
cat "$work"/fn-with-*.tsv | awk -F'\t' '{s[$2] += $1} END {for (f in s) print s[f] "\t" f}' >"$work/fn-with.tsv"
# (the entries that carry the whole difference, main and what is below it, are left out)
awk -F'\t' -v n="$runs" 'NR == FNR { w[$2] = $1; next } { d[$2] = $1 - w[$2]; if ($2 ~ /PROGRAM TOTALS/) t = d[$2] }
  END { for (f in d) if (d[f] > 0 && d[f] != t) printf "%12.0f  %s\n", d[f] / n, f }' \
  "$work/fn-without.tsv" "$work/fn-with.tsv" | sort -rn | head -"${TOP:-15}" || true
if [ -n "${KEEP:-}" ]; then echo "callgrind dumps in $work (cg-without-K.out.1, cg-with-K.out.1)"; fi
