#!/usr/bin/env bash
# CaptureShield Xorg tests: the cost bound (issue 25 point 10). An attacker (uid nobody)
# maps 2,000 shaped (an L of two rectangles) secure windows of its own over a victim's
# red secure window and moves 20 of them (each move a tree change the module computes
# again); the module bounds the secret region it accumulates (region.c, CS_MAX_BOXES:
# snapped outward to a grid past that, what covers what snapped inward). The bound must
# fail closed: another untrusted client (uid nobody) still gets 0 red pixels of the root
# and of the victim (censor and deny mode), while a trusted reader sees exactly the red
# pixels that a server without the module shows (the user's view is untouched). Positive
# controls: the same read with the GetImage rule off, and without the module, gets red.
# The servers log at verbosity 7, so the test also checks the bound was applied. The cost
# is measured, not asserted: xorg/bench/instr.sh (CS_INSTR_PARTS=attack).
# CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-bound
for b in "$ATK" "$TPROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
ATKT=$(trusted_copy "$ATK" atk-bound-trusted)
MODDIR=${CS_MODDIR:-$OUT}
NWIN=${CS_BOUND_WINDOWS:-2000}
MOVES=20

conf() {
  local f=$1; shift
  local save=$OUT; OUT=$MODDIR
  write_conf "$f" 1 "Option \"Trust\" \"$TPROBE:$ATKT\"" "$@"
  OUT=$save
}
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "getimage"'
write_conf "$TMP/N.conf" 0
start_xorg A "$TMP/A.conf" -logverbose 7
start_xorg D "$TMP/D.conf" -logverbose 7
start_xorg C "$TMP/C.conf"
start_xorg N "$TMP/N.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, getimage rule off $XDISPLAY_C," \
  "no module $XDISPLAY_N (module: $MODDIR); $NWIN windows, $MOVES moves"

# scene SRV: the victim (sets B_S) and the attacker's windows on server SRV, held until
# the end of the suite
scene() {
  local d=XDISPLAY_$1 f=$TMP/victim.$1 g=$TMP/flood.$1 i line=""
  export DISPLAY=${!d}
  : >"$f"; : >"$g"
  "$ATK" victim >"$f" 2>&1 &
  BG_PIDS+=($!)
  for i in $(seq 100); do line=$(grep "^S=" "$f" || true); [ -n "$line" ] && break; sleep 0.1; done
  [ -n "$line" ] || { echo "Error: victim did not start on $1: $(cat "$f")" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/B_/')"
  # its stdin: a fifo this shell holds open for writing (opened after the attacker was
  # started, so that only this shell holds it: the attacker sees EOF when the suite ends)
  mkfifo "$TMP/hold.$1"
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$ATK" flood "$NWIN" "$MOVES" \
    <"$TMP/hold.$1" >"$g" 2>&1 &
  BG_PIDS+=($!)
  exec {hold}>"$TMP/hold.$1"
  for i in $(seq 3000); do grep -q "^ready" "$g" && break; sleep 0.1; done
  grep -q "^ready n=$NWIN" "$g" || { echo "Error: attacker on $1: $(cat "$g")" >&2; exit 1; }
}
# untrusted reader (uid nobody, neither victim nor attacker)
rd() { as_nobody "$ATK" getimage "$@" 2>&1 | tr '\n' ' '; }

for s in N A D C; do scene "$s"; done

export DISPLAY=$XDISPLAY_N
out=$(rd); expect "no module: another client reads the victim's pixels (positive control)" "$out" red_max -gt 0
ref=$(fld "$out" red_max)
out=$("$ATKT" getimage); expect "no module: the trusted reader's red pixels (the user's view)" "$out" red_max -eq "$ref"

export DISPLAY=$XDISPLAY_C
out=$(rd); expect "getimage rule off: another client reads the victim's pixels (positive control)" "$out" red_max -eq "$ref"
out=$(rd "$B_S"); expect "getimage rule off: another client reads the victim window (positive control)" "$out" red_max -gt 0

export DISPLAY=$XDISPLAY_A
out=$(rd); expect "censor, $NWIN shaped secure windows: another client's GetImage of the root, 0 red" "$out" err -eq 0 red_max -eq 0 frames -eq 1
out=$(rd "$B_S"); expect "censor: another client's GetImage of the victim, 0 red" "$out" red_max -eq 0 frames -eq 1
out=$("$ATKT" getimage); expect "censor: the trusted reader sees every red pixel a server without the module shows" "$out" red_max -eq "$ref"
out=$("$ATKT" getimage "$B_S"); expect "censor: the trusted reader reads the victim window" "$out" red_max -gt 0

export DISPLAY=$XDISPLAY_D
out=$(rd); expect "deny, $NWIN shaped secure windows: another client's GetImage of the root, 0 red" "$out" red_max -eq 0
out=$(rd "$B_S"); expect "deny: another client's GetImage of the victim, 0 red" "$out" red_max -eq 0
out=$("$ATKT" getimage); expect "deny: the trusted reader sees every red pixel a server without the module shows" "$out" red_max -eq "$ref"

# the bound was applied (else this suite would not test it): region.c logs the count
for s in A D; do
  l=LOG_$s
  n=$(grep -o "[0-9]* regions bounded" "${!l}" | tail -1 | cut -d' ' -f1)
  if [ "${n:-0}" -gt 0 ]; then
    ok "$s: the secret region was bounded ($n times; $(grep -c 'secret area computed' "${!l}") computations)"
  else
    bad "$s: the bound was never applied (log: ${n:-no line})"
  fi
done
summary
