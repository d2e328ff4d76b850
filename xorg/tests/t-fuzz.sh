#!/usr/bin/env bash
# CaptureShield Xorg adversary suite: the property-based capture generator (atk-fuzz.c).
# One seed (printed; CS_FUZZ_SEED replays it; default a fixed seed, so that `make test`
# gives the same verdict every run; CS_FUZZ_SEED=random takes one from the clock, as
# `make xorg-fuzz` does) drives CS_FUZZ_CASES
# (default 100,000; `make xorg-fuzz` runs 500,000) random and extreme read requests
# (GetImage Z/XY, ShmGetImage, ShmCreatePixmap+CopyArea,
# CopyArea/CopyPlane in both subwindow modes, RENDER Composite with transforms, filters,
# repeats, masks, alpha maps, component alpha, Trapezoids/Triangles, NameWindowPixmap,
# DBE back buffers, GetProperty/RotateProperties on titles, RECORD) against a victim of
# another client that moves, restacks, unmaps and is reparented between batches.
# Censor and deny servers: 0 secret pixels and 0 title bytes on every path, and the
# server alive after. Positive controls: the same seed against a server with every rule
# off and a server without the module reads secrets on every path.
# Then the seeds that once found something (a replay of the same module build gives the
# same cases) run again on the censor and deny servers.
# CS_FUZZ_TRACE=1 with the seed sends one case at a time and names it (for a crash).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/t-lib.sh"
FUZZ=$OUT/atk-fuzz
CASES=${CS_FUZZ_CASES:-100000}
# seed:cases that found a leak once: 1796402875 (case 8598, the generator's own white
# through CopyPlane), 1 and 4000000000 (cases 4147, 9633: Triangles/TriStrip read past the
# reader's own window)
KNOWN="1796402875:10000 1:10000 4000000000:10000"
# a run's time limit: about 12,000 cases a second here, 50 times slower still passes
LIMIT=$(( 60 + CASES / 250 ))
SEED=${CS_FUZZ_SEED:-20261204}
[ "$SEED" = random ] && SEED=$(( $(date +%s) ^ $$ ))
export CS_FUZZ_SEED=$SEED
ALL_RULES=getimage,copyarea,render,namewindowpixmap,pixmap,forcedbg,property,dri,daemon,dbe,frame,title,overlay,geometry,blankfirst,filter,ownsecure,resources,stale,taint,record,properties,wmtitle
PATHS="getimage shm copy render namewindowpixmap dbe title record"
[ -x "$FUZZ" ] || { echo "Error: $FUZZ not built (make -C xorg probes)" >&2; exit 1; }
echo "# seed=$SEED cases=$CASES (replay: CS_FUZZ_SEED=$SEED)"

mod_conf "$TMP/A.conf"
mod_conf "$TMP/D.conf" 'Option "Mode" "deny"'
mod_conf "$TMP/C.conf" "Option \"DisableRules\" \"$ALL_RULES\""
write_conf "$TMP/B.conf" 0
# the censor and deny servers check each computation of the secret area (incremental or
# full, refresh.c) against an exact full one (CS_VERIFY_REGION=1; checked at the end)
CS_VERIFY_REGION=1 start_xorg A "$TMP/A.conf" -logverbose 7
CS_VERIFY_REGION=1 start_xorg D "$TMP/D.conf" -logverbose 7
start_xorg C "$TMP/C.conf"
start_xorg B "$TMP/B.conf"

# run NAME: the generator against server NAME; sets OUT_<NAME> (its whole output)
run() {
  local name=$1 disp out
  disp=XDISPLAY_$name
  if [ -n "${2:-}" ]; then export CS_FUZZ_STOCK_SAFE=1; else unset CS_FUZZ_STOCK_SAFE; fi
  out=$(DISPLAY=${!disp} timeout "$LIMIT" "$FUZZ" "$CASES" 2>&1) || true
  printf -v "OUT_$name" '%s' "$out"
  echo "## $name: $(echo "$out" | tail -1)"
}
# pathline OUT PATH: the "path=PATH ..." summary line
pathline() { echo "$1" | grep "^path=$2 " || echo "path=$2 missing"; }
lastline() { echo "$1" | grep "^seed=.* alive=" || echo "no summary"; }

# rules_on S NAME PID [stock-safe]: nothing secret on any path, and the server still up
rules_on() {
  local s=$1 name=$2 pid=$3 o out last p
  run "$s" "${4:-}"
  o=OUT_$s
  out=${!o}
  echo "$out" | grep -E "^(kind=|source=|LEAK|record:|connection)" | sed "s/^/# $name: /"
  if echo "$out" | grep -q "CLASS"; then
    echo "# $name: leak classes:"
    echo "$out" | grep "CLASS" | sort -t: -k1,1 | sed "s/^ */#   /"
  fi
  last=$(lastline "$out")
  if kill -0 "$pid" 2>/dev/null && [ "$(fld "$last" alive)" = 1 ]; then
    ok "fuzz $name: server alive after the run"
  else
    bad "fuzz $name: the server died (replay: CS_FUZZ_SEED=$SEED CS_FUZZ_TRACE=1 names the case)"
    DIED=1
  fi
  expect "fuzz $name: all $CASES cases ran" "$last" cases -ge "$CASES"
  for p in $PATHS; do
    expect "fuzz $name: $p, no secret pixels or title bytes" "$(pathline "$out" "$p")" \
      leaked_px -eq 0 title_bytes -eq 0
  done
  expect "fuzz $name: seed $SEED, no secret anywhere" "$last" leaked_px -eq 0 title_bytes -eq 0
}
for s in A D; do
  name=$([ "$s" = A ] && echo censor || echo deny)
  DIED=0
  rules_on "$s" "$name" "${XORG_PIDS[$([ "$s" = A ] && echo 0 || echo 1)]}"
  if [ "$DIED" = 1 ]; then
    # the same seed again on a fresh server, without the copies stock Xorg dies on, so
    # that what leaks after the crash point is seen too
    start_xorg "${s}2" "$TMP/$s.conf"
    rules_on "${s}2" "$name (again, no stock-crash copies)" "${XORG_PIDS[-1]}" 1
  fi
done

# the seeds that found something, again (their cases are the same for the same build)
for k in $KNOWN; do
  for s in A D; do
    name=$([ "$s" = A ] && echo censor || echo deny)
    disp=XDISPLAY_$s
    out=$(DISPLAY=${!disp} CS_FUZZ_SEED=${k%%:*} timeout "$LIMIT" "$FUZZ" "${k#*:}" 2>&1) || true
    echo "$out" | grep -E "^(LEAK|connection)" | sed "s/^/# $name: /" || true
    expect "fuzz $name: known seed ${k%%:*} (${k#*:} cases), no secret, server alive" \
      "$(lastline "$out")" cases -ge "${k#*:}" leaked_px -eq 0 title_bytes -eq 0 alive -eq 1
  done
done

# verify mode: no computation of the secret area held less than the exact area
verify_log() {
  local s=$1 l=LOG_$1 last
  last=$(grep "verify: [0-9]* checks" "${!l}" | tail -1 || true)
  if grep -q "verify: the .* misses" "${!l}"; then
    bad "$s: a cached secret area missed part of the exact one: $(grep -m3 'verify: the' "${!l}" | tr '\n' ' ')"
  elif [ -z "$last" ]; then
    bad "$s: verify mode checked nothing"
  else
    ok "$s: every computation of the secret area held the exact area (${last#*verify: })"
  fi
}
verify_log A
verify_log D

# positive controls: every rule off, and no module, read secrets on every path
for s in C B; do
  name=$([ "$s" = C ] && echo rules-off || echo no-module)
  # stock Xorg 21.1.7 itself segfaults on a copy from a redirected window with a source
  # box past 32767 (e.g. 2x65535): the controls leave those out so that they finish
  run "$s" 1
  o=OUT_$s
  out=${!o}
  last=$(lastline "$out")
  expect "fuzz control $name: secrets read (not vacuous)" "$last" leaked_px -gt 0 title_bytes -gt 0
  for p in $PATHS; do
    l=$(pathline "$out" "$p")
    if [ "$p" = title ]; then
      expect "fuzz control $name: $p read" "$l" title_bytes -gt 0
    elif [ "$p" = record ]; then
      expect "fuzz control $name: $p read" "$l" leaked_px -gt 0 title_bytes -gt 0
    else
      expect "fuzz control $name: $p read" "$l" leaked_px -gt 0
    fi
  done
done
# The same generator as a client of the other byte order: built for a big-endian CPU
# (s390x) and run by qemu-user, its connection setup, requests, replies and events are all
# byte-swapped for this server (the module's wrappers see swapped clients through
# SwappedProcVector). As many cases (CS_FUZZ_SWAP_CASES: another count); the rules on: no
# secret, the server alive; the positive controls (rules off, no module): the same swapped
# client reads the secrets through every path.
SWAP=$OUT/be/atk-fuzz
SWAP_CASES=${CS_FUZZ_SWAP_CASES:-$CASES}
SWAP_LIMIT=$(( 60 + SWAP_CASES / 100 ))
[ -x "$SWAP" ] || { echo "Error: $SWAP not built (make -C xorg probes; scripts/install-deps.sh xorg)" >&2; exit 1; }
command -v qemu-s390x >/dev/null || { echo "Error: qemu-s390x missing (scripts/install-deps.sh xorg)" >&2; exit 1; }
for s in A D C B; do
  case $s in A) name=censor ;; D) name=deny ;; C) name=rules-off ;; B) name=no-module ;; esac
  disp=XDISPLAY_$s
  if [ $s = C ] || [ $s = B ]; then export CS_FUZZ_STOCK_SAFE=1; else unset CS_FUZZ_STOCK_SAFE; fi
  out=$(DISPLAY=${!disp} timeout "$SWAP_LIMIT" qemu-s390x "$SWAP" "$SWAP_CASES" 2>&1) || true
  last=$(lastline "$out")
  echo "## swapped $name: $last"
  if [ $s = A ] || [ $s = D ]; then
    echo "$out" | grep -E "^(LEAK|connection)" | sed "s/^/# swapped $name: /" || true
    expect "fuzz swapped $name: $SWAP_CASES cases from a byte-swapped client, no secret, server alive" \
      "$last" cases -ge "$SWAP_CASES" leaked_px -eq 0 title_bytes -eq 0 alive -eq 1
    for p in $PATHS; do
      expect "fuzz swapped $name: $p, no secret pixels or title bytes" "$(pathline "$out" "$p")" \
        leaked_px -eq 0 title_bytes -eq 0
    done
  else
    expect "fuzz swapped control $name: the byte-swapped client reads secrets (not vacuous)" \
      "$last" leaked_px -gt 0 title_bytes -gt 0
    for p in $PATHS; do
      l=$(pathline "$out" "$p")
      if [ "$p" = title ]; then
        expect "fuzz swapped control $name: $p read" "$l" title_bytes -gt 0
      else
        expect "fuzz swapped control $name: $p read" "$l" leaked_px -gt 0
      fi
    done
  fi
done
summary
