#!/usr/bin/env bash
# CaptureShield Xorg bench: the cost bound (`CS_MAX_BOXES`, area.c), before and after in one run.
# Servers under valgrind callgrind, side by side: without the module, and with the module
# of each DIR given (default: the build, $OUT). On each, a victim's red secure window and
# an attacker that maps 2,000 shaped (L) secure windows of its own (tests/atk-bound.c,
# the scene of tests/t-bound.sh), set up once; then the server's instructions (callgrind
# Ir, between a zeroing and a dump of its counters):
#   - per attacker loop "move one of its windows 1 px, GetImage 1x1 of the root there"
#     (LOOPS loops, after the setup and 2 warm-up loops);
#   - per GetImage 1x1 of the root by another client while those windows are mapped
#     (READS reads, after one warm-up read that pays the computation left by the moves);
#   - another client's first GetImage 1x1 of the root right after one attacker loop
#     (what a client arriving behind the attacker pays: a computation of the secret area,
#     if the loop left one);
#   - the same over PAIRS (attacker loop, other client's read) pairs: mean and largest
#     (the module computes the area in full every 64th time, incrementally otherwise).
# Figures only, nothing is asserted. Usage: bound.sh [LABEL=DIR ...]
# Env: CS_BOUND_LOOPS (default 4), CS_BOUND_READS (default 50), CS_BOUND_WINDOWS (2,000),
# CS_BOUND_PAIRS (default 70; 0 leaves that row out).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/../../.build/xorg}
LOOPS=${CS_BOUND_LOOPS:-4}
READS=${CS_BOUND_READS:-50}
NWIN=${CS_BOUND_WINDOWS:-2000}
PAIRS=${CS_BOUND_PAIRS:-70}
TMP=$(mktemp -d /tmp/csbound.XXXXXX)
chmod 755 "$TMP"
. "$here/../tests/xorg-lib.sh"
BG=()
cleanup() {
  local p
  for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_all_xorg
  rm -rf "$TMP"
}
trap cleanup EXIT
for t in valgrind callgrind_control; do
  command -v "$t" >/dev/null || { echo "Error: $t missing (apt-get install valgrind)" >&2; exit 1; }
done
[ -x "$OUT/atk-bound" ] || { echo "Error: build first (make -C xorg module probes)" >&2; exit 1; }
[ $# -gt 0 ] || set -- "module=$OUT"

cat >"$TMP/xorg-cg" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="\$CG_OUT" --dump-instr=no /usr/lib/xorg/Xorg "\$@"
EOF
chmod +x "$TMP/xorg-cg"
NAMES=(S0) LABELS=(without)
write_conf "$TMP/S0.conf" 0
i=0
for a in "$@"; do
  i=$((i + 1))
  d=${a#*=}
  [ -f "$d/libcaptureshield.so" ] || { echo "Error: no $d/libcaptureshield.so" >&2; exit 1; }
  write_conf "$TMP/S$i.conf" 1
  sed -i "s|ModulePath \"$OUT,|ModulePath \"$d,|" "$TMP/S$i.conf"
  NAMES+=("S$i"); LABELS+=("${a%%=*}")
done
for s in "${NAMES[@]}"; do
  # no GLX (loading swrast under valgrind takes longer than start_xorg waits)
  sed -i 's/^Section "Module"$/Section "Module"\n  Disable "glx"/' "$TMP/$s.conf"
  CG_OUT=$TMP/cg.$s XORG_BIN=$TMP/xorg-cg start_xorg "$s" "$TMP/$s.conf"
  printf -v "PID_$s" '%s' "${XORG_PIDS[-1]}"
done

# the scenes, set up on all servers at once; attacker's stdin: fd saved in IN_<server>
for s in "${NAMES[@]}"; do
  d=XDISPLAY_$s
  DISPLAY=${!d} "$OUT/atk-bound" victim >"$TMP/victim.$s" 2>&1 &
  BG+=($!)
done
sleep 2
for s in "${NAMES[@]}"; do
  d=XDISPLAY_$s
  mkfifo "$TMP/in.$s"
  DISPLAY=${!d} "$OUT/atk-bound" flood "$NWIN" 2 <"$TMP/in.$s" >"$TMP/flood.$s" 2>&1 &
  BG+=($!)
  exec {fd}>"$TMP/in.$s"
  printf -v "IN_$s" '%s' "$fd"
done
for s in "${NAMES[@]}"; do
  for i in $(seq 6000); do grep -q "^ready" "$TMP/flood.$s" && break; sleep 0.1; done
  grep -q "^ready" "$TMP/flood.$s" || { echo "Error: attacker on $s: $(cat "$TMP/flood.$s")" >&2; exit 1; }
done

# dump SERVER: dumps the counters, prints the new dump's total instructions
dump() {
  local s=$1 pid=PID_$1 before i f
  before=$(ls "$TMP"/cg."$s".* 2>/dev/null | wc -l)
  callgrind_control -d "${!pid}" >/dev/null 2>&1
  for i in $(seq 200); do
    [ "$(ls "$TMP"/cg."$s".* 2>/dev/null | wc -l)" -gt "$before" ] && break
    sleep 0.05
  done
  f=$(ls -t "$TMP"/cg."$s".* | head -1)
  sed -n 's/^summary: //p' "$f"
}
zero() { local pid=PID_$1; callgrind_control -z "${!pid}" >/dev/null 2>&1; }
# loops SERVER N: the server's instructions per attacker loop over N loops
loops() {
  local s=$1 n=$2 fd=IN_$1 i k
  k=$(grep -c "^done" "$TMP/flood.$s" || true)
  zero "$s"
  echo "go $n" >&"${!fd}"
  for i in $(seq 36000); do [ "$(grep -c "^done" "$TMP/flood.$s" || true)" -gt "$k" ] && break; sleep 0.1; done
  dump "$s" | awk -v n="$n" '{ printf "%.0f", $1 / n }'
}
# reads SERVER N: the server's instructions per GetImage 1x1 of the root, another client
reads() {
  local s=$1 n=$2 d=XDISPLAY_$1 base
  DISPLAY=${!d} "$OUT/atk-bound" read1 1 >/dev/null      # pays a computation left over
  zero "$s"
  DISPLAY=${!d} "$OUT/atk-bound" read1 0 >/dev/null
  base=$(dump "$s")                                     # a client that reads nothing
  zero "$s"
  DISPLAY=${!d} "$OUT/atk-bound" read1 "$n" >/dev/null
  dump "$s" | awk -v n="$n" -v b="$base" '{ printf "%.0f", ($1 - b) / n }'
}

# first SERVER: the server's instructions for another client's first GetImage 1x1 of the
# root right after one attacker loop (it pays the computation that loop left, if any)
first() {
  local s=$1 d=XDISPLAY_$1 fd=IN_$1 base i k
  zero "$s"
  DISPLAY=${!d} "$OUT/atk-bound" read1 0 >/dev/null
  base=$(dump "$s")
  k=$(grep -c "^done" "$TMP/flood.$s" || true)
  echo "go 1" >&"${!fd}"
  for i in $(seq 36000); do [ "$(grep -c "^done" "$TMP/flood.$s" || true)" -gt "$k" ] && break; sleep 0.1; done
  zero "$s"
  DISPLAY=${!d} "$OUT/atk-bound" read1 1 >/dev/null
  dump "$s" | awk -v b="$base" '{ printf "%.0f", $1 - b }'
}

echo "# Xorg 21.1.7, dummy driver, 800x600x24, under callgrind: $NWIN shaped (L) secure windows"
echo "# of an untrusted attacker over another client's red secure window"
printf '%-58s' measure; for l in "${LABELS[@]}"; do printf ' %14s' "$l"; done; echo
printf '%-58s' "server instructions per attacker loop (move 1 px + read)"
for s in "${NAMES[@]}"; do printf ' %14s' "$(loops "$s" "$LOOPS")"; done; echo
printf '%-58s' "server instructions per other client's GetImage 1x1 (root)"
for s in "${NAMES[@]}"; do printf ' %14s' "$(reads "$s" "$READS")"; done; echo
printf '%-58s' "the same, the first read right after an attacker loop"
for s in "${NAMES[@]}"; do printf ' %14s' "$(first "$s")"; done; echo
# pairs SERVER N: "mean/max" of another client's first read after each of N attacker loops
pairs() {
  local s=$1 n=$2 d=XDISPLAY_$1 fd=IN_$1 base i k j v sum=0 mx=0
  zero "$s"
  DISPLAY=${!d} "$OUT/atk-bound" read1 0 >/dev/null
  base=$(dump "$s")
  for j in $(seq "$n"); do
    k=$(grep -c "^done" "$TMP/flood.$s" || true)
    echo "go 1" >&"${!fd}"
    for i in $(seq 36000); do [ "$(grep -c "^done" "$TMP/flood.$s" || true)" -gt "$k" ] && break; sleep 0.1; done
    zero "$s"
    DISPLAY=${!d} "$OUT/atk-bound" read1 1 >/dev/null
    v=$(( $(dump "$s") - base ))
    sum=$(( sum + v ))
    [ "$v" -gt "$mx" ] && mx=$v
  done
  echo "$(( sum / n ))/$mx"
}
if [ "$PAIRS" -gt 0 ]; then
  printf '%-58s' "the same over $PAIRS loop+read pairs: mean/largest"
  for s in "${NAMES[@]}"; do printf ' %14s' "$(pairs "$s" "$PAIRS")"; done; echo
fi
