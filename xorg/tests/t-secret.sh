#!/usr/bin/env bash
# CaptureShield Xorg tests: one definition of what is secret (rules ownsecure, resources, stale, taint).
# Each attack runs as uid nobody against a censor-mode and a deny-mode server, and against
# a server with the rule it tests switched off (positive control: the attack gets the
# secret there). CS_MODDIR=DIR runs the suite with the module built in DIR (e.g. main's,
# to see it fail).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-secret
for b in "$ATK" "$PROBE" "$TPROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done

# A censor, D deny, C censor with this suite's rules off. A trail long enough for any
# machine's pace (the compositor cases run last on each server).
conf() {
  local f=$1; shift
  mod_conf "$f" "Option \"Trust\" \"$TPROBE\"" 'Option "TrailMs" "60000"' "$@"
}
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "ownsecure,resources,stale,taint,blankfirst,opacity"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rules off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

# sv [--untagged]: the victim (atk-secret victim): its secure window S, double buffer BUF,
# SHM segment SEG and picture PIC (sets V_S V_BUF V_SEG V_PIC); SV_IN: its stdin
sv() {
  local line
  { coproc SV { exec "$ATK" victim "$@"; }; } 2>/dev/null
  SVPID=$SV_PID; BG_PIDS+=("$SVPID"); SV_OUT=${SV[0]}; SV_IN=${SV[1]}
  read -r -t 10 line <&"$SV_OUT" || { echo "Error: victim did not start" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/V_/')"
}
svstop() { kill "$SVPID" 2>/dev/null || true; wait "$SVPID" 2>/dev/null || true; }
atk() { as_nobody "$ATK" attack "$@" 2>&1 | tr '\n' ' '; }

# name_wait STEP: the attacker names S's pixmap (name-wait) while S is untagged or
# protection paused, STEP ("tag" or "resume") runs, then the attacker reads the pixmap
name_wait() {
  local line out
  { coproc NW { exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$ATK" attack name-wait "$V_S"; }; } 2>/dev/null
  local pid=$NW_PID out_fd=${NW[0]} in_fd=${NW[1]}
  BG_PIDS+=("$pid")
  read -r -t 10 line <&"$out_fd" || line=none
  if [ "$1" = tag ]; then
    echo tag >&"$SV_IN"; read -r -t 10 _ <&"$SV_OUT" || true
  else
    "$TPROBE" proto protect 1 >/dev/null
  fi
  echo go >&"$in_fd"
  read -r -t 10 out <&"$out_fd" || out=none
  wait "$pid" 2>/dev/null || true
  echo "$line $out"
}

# run_all SRV: every attack on server SRV, one line "KEY: output" each
run_all() {
  local k out
  export DISPLAY=$1
  for k in reparent-own copy-own pixmap shmpixmap shmput picture overlay-move overlay-unmap overlay-destroy \
           saver-move saver-unmap saver-destroy manual-over name-reparent; do
    sv
    case $k in
      pixmap) out=$(atk pixmap "$V_BUF") ;;
      shmpixmap|shmput) out=$(atk $k "$V_SEG") ;;
      picture) out=$(atk picture "$V_PIC") ;;
      *) out=$(atk $k "$V_S") ;;
    esac
    echo "$k: $out"
    svstop
  done
  sv --untagged
  echo "name-tag: $(name_wait tag)"
  svstop
  sv
  "$TPROBE" proto protect 0 >/dev/null
  echo "name-pause: $(name_wait resume)"
  svstop
  # last: a compositor of ours (trusted) paints S, a window of ours mapped over it
  sv
  local fifo="$TMP/comp.in" cout="$TMP/comp.out" cp i
  rm -f "$fifo" "$cout"; mkfifo "$fifo"
  "$TPROBE" compositor "$V_S" "$V_S" <"$fifo" >"$cout" 2>&1 &
  cp=$!; BG_PIDS+=("$cp")
  exec 7>"$fifo"
  for i in $(seq 100); do grep -q painted "$cout" && break; sleep 0.1; done
  echo "lag: $(atk lag "$V_S")"
  exec 7>&-
  wait "$cp" 2>/dev/null || true
  svstop
}

res() { sed -n "s/^$2: //p" "$TMP/$1.res"; }
run_all "$XDISPLAY_A" >"$TMP/A.res"
run_all "$XDISPLAY_D" >"$TMP/D.res"
run_all "$XDISPLAY_C" >"$TMP/C.res"

# name KEY what: checks KEY on the three servers. Censor: no red, the secret area black
# (reads) or refused (resources); deny: no red, refused; rules off: red.
check() {
  local key=$1 what=$2 mode=$3 a d c
  a=$(res A "$key"); d=$(res D "$key"); c=$(res C "$key")
  case $mode in
    read)     # censored reads: 40,000 black
      expect "censor: $what" "$a" red_max -eq 0 black_min -eq 40000 refused -eq 0
      expect "deny: $what" "$d" red_max -eq 0 refused -ge 1 ;;
    readname) # the same, and a NameWindowPixmap refused
      expect "censor: $what" "$a" red_max -eq 0 black_min -eq 40000 refused -eq 1
      expect "deny: $what" "$d" red_max -eq 0 refused -ge 1 ;;
    refuse)   # resources: refused in both modes
      expect "censor: $what" "$a" red_max -eq 0 refused -ge 1
      expect "deny: $what" "$d" red_max -eq 0 refused -ge 1 ;;
  esac
  expect "rule off (positive control): $what" "$c" red_max -eq 40000
}
check reparent-own "S reparented into the reader's own secure window: reads of it and the root, NameWindowPixmap of it" readname
expect "censor: S in the reader's own secure window, NameWindowPixmap of that window refused" "$(res A reparent-own)" frames -eq 3 refused -eq 1
check copy-own "the root (S in it) copied into the reader's own secure window (CopyArea, RENDER Composite), read back" read
check pixmap "the owner's double buffer (pixmap): GetImage, CopyArea" refuse
check shmpixmap "the owner's SHM segment via ShmCreatePixmap" refuse
check shmput "the owner's SHM segment via ShmPutImage" refuse
expect "censor: ShmGetImage into the owner's SHM segment refused" "$(res A shmput)" shmget_err -eq 10
expect "deny: ShmGetImage into the owner's SHM segment refused" "$(res D shmput)" shmget_err -eq 10
check picture "the owner's picture (RENDER Composite)" refuse
check overlay-move "overlay window mapped (frozen framebuffer), S moved: where it was" read
check overlay-unmap "overlay window mapped, S unmapped: where it was" read
check overlay-destroy "overlay window mapped, S destroyed: where it was" read
check saver-move "screen saver window (MIT-SCREEN-SAVER, background None), S moved: where it was" read
check saver-unmap "screen saver window, S unmapped: where it was" read
check saver-destroy "screen saver window, S destroyed: where it was" read
check manual-over "own window manually redirected over S: the framebuffer under it" read
check name-reparent "own redirected window's pixmap named, then S reparented into it" refuse
check name-tag "S's pixmap named while S was untagged, then S tagged" refuse
expect "the pixmap of untagged S could be named" "$(res A name-tag)" named -eq 1
check name-pause "S's pixmap named while protection was paused, then resumed" refuse
expect "the pixmap of S could be named during the pause" "$(res A name-pause)" named -eq 1
check lag "compositor: own window mapped over S and the root read in the same batch" read
summary
