#!/usr/bin/env bash
# CaptureShield Xorg adversary suite: request geometry at the protocol's limits, write
# ordering (racing SHM readers, copies into one's own secure window) and RENDER sources that
# move pixels (filters, transforms, repeat, alpha maps, masks, shapes drawn past the
# source window), with the generator's (t-fuzz.sh) finds as fixed cases. The attacker
# (atk-geom, run as uid nobody) reads the victim's 200x200 red secure window (37,500 px
# visible: the blue window covers a corner) on a censor-mode and a deny-mode server; each
# attack also runs on a control server with the rules off, where it must get the red pixels.
# CS_MODDIR=DIR loads the module from DIR instead of $OUT (e.g. an older build, to
# measure it: the cases then fail where that build leaks).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/t-lib.sh"
ATK=$OUT/atk-geom

# server NAME [Option lines]: a server with the module (from CS_MODDIR or OUT); "none": without it
server() {
  local name=$1; shift
  if [ "${1:-}" = none ]; then
    write_conf "$TMP/$name.conf" 0
  else
    mod_conf "$TMP/$name.conf" "$@"
  fi
  start_xorg "$name" "$TMP/$name.conf"
  local d="XDISPLAY_$name"
  export DISPLAY=${!d}
  SPID=${XORG_PIDS[$((${#XORG_PIDS[@]} - 1))]}
}
atk() { as_nobody timeout 120 "$ATK" "$@" 2>&1 | tail -1 || true; }
alive() { kill -0 "$SPID" 2>/dev/null && echo "server=1" || echo "server=0"; }

# the attacks: name | arguments | the rule whose absence lets it through (control server)
ATTACKS=(
  "copy-wrap|copy -100 -100 0 0 40000 40000"
  "copy-wrap-32868|copy -100 -100 0 0 32868 32868"
  "copyplane-wrap|plane -100 -100 0 0 40000 40000"
  "composite-wrap|comp -100 -100 0 0 40000 40000"
  "composite-wrap-65535|comp 0 0 0 0 65535 65535"
  "getimage-extreme|getimage -32768 -32768 65535 65535"
  "getimage-edge|getimage 0 0 800 600"
  "getimage-xy|getimage-xy 0 0 800 600"
  "convolution|conv"
  "transform|xform"
  "repeat-normal|repeat"
  "repeat-reflect|reflect"
  "alphamap|alphamap"
  "mask-convolution|mask"
  "copy-into-own-secure|owncopy"
  "composite-into-own-secure|owncomp"
  "copyplane-own-white|planeown"
  "triangles-past-own-window|tri"
  "trapezoids-past-own-window|trap"
  "composite-wrap-window-origin|compwin"
)
RACES=("shm-race-getimage|shmget 1000" "shm-race-copyarea|shmcopy 300"
       "shm-race-composite|shmcomp 300")

# ---- censor mode: nothing red, ever (the racing reader included) ----
server C
start_victim
for a in "${ATTACKS[@]}"; do
  n=${a%%|*} args=${a#*|}
  out=$(atk $args)
  case $n in
    copy-wrap|composite-wrap|getimage-xy) expect "censor: $n: 0 red, the rest copied" "$out" red -eq 0 blue -ge 10000 ;;
    getimage-extreme) expect "censor: $n: 0 red" "$out" red -eq 0 ;;   # BadMatch from dix
    # the own white window's set plane stays (3,600 px of the red foreground): what the
    # generator counted at seed 1796402875, case 8598, was the reader's own
    copyplane-own-white) expect "censor: $n: 0 red, the own window's plane copied" "$out" \
      red -eq 0 own -eq 3600 err -eq 0 ;;
    # drawn through shapes, a window source is refused while its pixmap has a secret part
    *-past-own-window) expect "censor: $n: refused, 0 red" "$out" red -eq 0 err -eq 10 ;;
    *) expect "censor: $n: 0 red" "$out" red -eq 0 err -eq 0 ;;
  esac
done
for a in "${RACES[@]}"; do
  n=${a%%|*} args=${a#*|}
  expect "censor: $n: a racing reader of the segment never sees red" "$(atk $args)" \
    seen -eq 0 hits -eq 0 red -eq 0 err -eq 0
done
for seed in 1 15; do
  out="$(atk fuzz 500 $seed) $(alive)"
  expect "censor: 500 random extreme-geometry requests (seed $seed): server alive, 0 red" \
    "$out" alive -eq 1 server -eq 1 red -eq 0
done
out="$(atk selfcopy 126 455 100 174 17 65535) $(alive)"
expect "censor: CopyArea pixmap->itself, y+h past 32767 (crashes stock 21.1.7): alive" \
  "$out" alive -eq 1 server -eq 1
stop_victim

# ---- deny mode: refused (BadAccess), nothing red ----
server D 'Option "Mode" "deny"'
start_victim
for a in "${ATTACKS[@]}" "${RACES[@]}"; do
  n=${a%%|*} args=${a#*|}
  out=$(atk $args)
  case $n in
    getimage-extreme) expect "deny: $n: 0 red" "$out" red -eq 0 ;;
    *) expect "deny: $n: refused, 0 red" "$out" red -eq 0 err -eq 10 ;;
  esac
done
for seed in 1 15; do
  out="$(atk fuzz 500 $seed) $(alive)"
  expect "deny: 500 random extreme-geometry requests (seed $seed): server alive, 0 red" \
    "$out" alive -eq 1 server -eq 1 red -eq 0
done
out="$(atk selfcopy 126 455 100 174 17 65535) $(alive)"
expect "deny: CopyArea pixmap->itself, y+h past 32767: alive" "$out" alive -eq 1 server -eq 1
stop_victim

# ---- positive controls: the same attacks get the secret with the rules off ----
server P 'Option "DisableRules" "getimage copyarea render"'
start_victim
for a in "${ATTACKS[@]}" "${RACES[@]}"; do
  n=${a%%|*} args=${a#*|}
  case $n in getimage-extreme) continue ;; esac
  out=$(atk $args)
  case $n in
    # the segment holds the secret once the request is done (what a racing thread saw
    # depends on scheduling: seen=0 once under load, so it is not what is asserted)
    shm-*) expect "control (rules off): $n: the segment gets the secret" "$out" red -gt 30000 ;;
    *) expect "control (rules off): $n leaks" "$out" red -gt 30000 ;;
  esac
done
stop_victim
# the new rules alone: what only they close (a copy into the own secure window is also
# blanked by ownsecure, which must be off too)
server B 'Option "DisableRules" "blankfirst filter ownsecure"'
start_victim
for a in "convolution|conv" "mask-convolution|mask" "copy-into-own-secure|owncopy" \
         "composite-into-own-secure|owncomp"; do
  n=${a%%|*} args=${a#*|}
  expect "control (blankfirst filter off): $n leaks" "$(atk $args)" red -gt 30000
done
for a in "${RACES[@]}"; do      # timing: reported, not asserted
  n=${a%%|*} args=${a#*|}
  echo "info - control (blankfirst filter off): $n: $(atk $args)"
done
stop_victim
# the stock server dies on the self-copy (reported, not asserted: a crash of undefined
# behaviour need not happen every time)
server N none
out="$(atk selfcopy 126 455 100 174 17 65535) $(alive)"
echo "info - no module: CopyArea pixmap->itself, y+h past 32767: $out"

summary
