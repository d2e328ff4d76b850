#!/usr/bin/env bash
# CaptureShield Xorg tests: the cost bound. An attacker (uid nobody)
# maps 2,000 shaped (an L of two rectangles) secure windows of its own over a victim's
# red secure window and moves 20 of them (each move a tree change the module computes
# again); the module bounds the secret region it accumulates (area.c, CS_MAX_BOXES:
# snapped outward to a grid past that, what covers what snapped inward). The bound must
# fail closed: another untrusted client (uid nobody) still gets 0 red pixels of the root
# and of the victim (censor and deny mode), while a trusted reader sees exactly the red
# pixels that a server without the module shows (the user's view is untouched). Positive
# controls: the same read with the GetImage rule off, and without the module, gets red.
# Then the secure windows go and 2,000 plain (untagged) shaped windows cover the victim:
# the same checks (what covers the victim is bounded too); then 300 plain ones over the
# victim's window only (its visible part in hundreds of pieces: the secret area bounded).
# The servers log at verbosity 7, so the test also checks the bound was applied. The cost
# is measured, not asserted: xorg/bench/instr.sh (CS_INSTR_PARTS=attack).
# The secret area is kept per owner and computed again only where windows changed
# (area.c, refresh.c): the censor and deny servers run in verify mode (CS_VERIFY_REGION=1: each
# computation checked against an exact full one, a miss logged and made secret), and
# another client moves, raises, lowers, unmaps, resizes the attacker's windows and makes
# them jump onto the victim, reading after each change (incremental computations), and a
# third client tags and untags a window of its own over the victim, read after each.
# Last, the per-owner bound: 300 shaped secure windows in the right quarter (x >= 600), a
# third client's yellow window between them and the victim (510..590: outside the
# attacker's own area's extents) reads in full, while one inside those extents (680..760,
# over the attacker's windows) is blackened in part (what the bound still costs, the
# control that the bound applies); no module and the getimage rule off read both in full.
# A module with one bound over all owners (before) blackened the window between them
# (CS_MODDIR=that build: those checks fail).
# CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-bound
for b in "$ATK" "$TPROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
ATKT=$(trusted_copy "$ATK" atk-bound-trusted)
NWIN=${CS_BOUND_WINDOWS:-2000}
MOVES=20

conf() {
  local f=$1; shift
  mod_conf "$f" "Option \"Trust\" \"$TPROBE:$ATKT\"" "$@"
}
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "getimage"'
write_conf "$TMP/N.conf" 0
CS_VERIFY_REGION=1 start_xorg A "$TMP/A.conf" -logverbose 7
CS_VERIFY_REGION=1 start_xorg D "$TMP/D.conf" -logverbose 7
start_xorg C "$TMP/C.conf"
start_xorg N "$TMP/N.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, getimage rule off $XDISPLAY_C," \
  "no module $XDISPLAY_N (module: ${CS_MODDIR:-$OUT}); $NWIN windows, $MOVES moves"

# flood SRV [plain]: the attacker's windows on server SRV (plain: untagged ones, over
# everything), held until the end of the suite
flood() {
  set -- "$1" "${2:-}" "${3:-}"
  local d=XDISPLAY_$1 g=$TMP/flood.$1$2 i
  export DISPLAY=${!d}
  : >"$g"
  # its stdin: a fifo this shell holds open for writing (opened after the attacker was
  # started, so that only this shell holds it: the attacker sees EOF when the suite ends)
  mkfifo "$TMP/hold.$1$2"
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$ATK" flood "${3:-$NWIN}" "$MOVES" ${2:+"$2"} \
    <"$TMP/hold.$1$2" >"$g" 2>&1 &
  BG_PIDS+=($!)
  printf -v "FL_$1$2" '%s' "$!"
  exec {hold}>"$TMP/hold.$1$2"
  for i in $(seq 3000); do grep -q "^ready" "$g" && break; sleep 0.1; done
  grep -q "^ready n=${3:-$NWIN}" "$g" || { echo "Error: attacker on $1: $(cat "$g")" >&2; exit 1; }
}
# scene SRV: the victim (sets B_S) and the attacker's secure windows on server SRV
scene() {
  local d=XDISPLAY_$1 f=$TMP/victim.$1 i line=""
  export DISPLAY=${!d}
  : >"$f"
  "$ATK" victim >"$f" 2>&1 &
  BG_PIDS+=($!)
  for i in $(seq 100); do line=$(grep "^S=" "$f" || true); [ -n "$line" ] && break; sleep 0.1; done
  [ -n "$line" ] || { echo "Error: victim did not start on $1: $(cat "$f")" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/B_/')"
  flood "$1"
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

# another client changes the attacker's windows, reading after each change: each read
# computes the secret area again where those windows were and are (verify mode checks it)
SHUF=${CS_BOUND_SHUFFLE:-30}
for s in N A D C; do
  d=XDISPLAY_$s
  out=$(DISPLAY=${!d} as_nobody "$ATK" shuffle "$SHUF" 2>&1)
  expect "$s: another client changed $SHUF of the attacker's windows" "shuffled=$(echo "$out" | cut -d' ' -f2)" shuffled -eq "$SHUF"
  # a third client tags and untags a window of its own over the victim, another
  # connection reading after each (a tag change recomputes that window's place only)
  out=$(DISPLAY=${!d} as_nobody "$ATK" tagger 10 2>&1)
  expect "$s: a window tagged and untagged 10 times" "tagged=$(echo "$out" | cut -d' ' -f2)" tagged -eq 10
done
export DISPLAY=$XDISPLAY_N
out=$(rd); expect "after the changes, no module: another client reads the victim's pixels (positive control)" "$out" red_max -gt 0
ref=$(fld "$out" red_max)
export DISPLAY=$XDISPLAY_C
out=$(rd); expect "after the changes, getimage rule off: another client reads them (positive control)" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_A
out=$(rd); expect "censor, after the changes: another client's GetImage of the root, 0 red" "$out" err -eq 0 red_max -eq 0 frames -eq 1
out=$("$ATKT" getimage); expect "censor, after the changes: the trusted reader sees every red pixel" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_D
out=$(rd); expect "deny, after the changes: another client's GetImage of the root, 0 red" "$out" red_max -eq 0

# then the secure windows go, and 2,000 plain (untagged) shaped windows of the attacker
# cover the victim: what covers it is bounded (it may only shrink: a subset counts as
# covered), and nothing else is secret that could hide a mistake there
# replace SRV OLD KIND [N]: the attacker's windows of flood OLD go, then flood KIND
replace() {
  local p=FL_$1$2 d=XDISPLAY_$1 i
  kill "${!p}"; wait "${!p}" 2>/dev/null || true
  for i in $(seq 100); do [ "$(DISPLAY=${!d} "$ATK" children)" -le 1 ] && break; sleep 0.1; done
  [ "$(DISPLAY=${!d} "$ATK" children)" -le 1 ] || { echo "Error: the attacker's windows stayed on $1" >&2; exit 1; }
  flood "$1" "$3" "${4:-}"
}
for s in N A D C; do replace "$s" "" plain; done
export DISPLAY=$XDISPLAY_N
out=$(rd); expect "plain windows over it, no module: another client reads the victim's pixels (positive control)" "$out" red_max -gt 0
ref=$(fld "$out" red_max)
export DISPLAY=$XDISPLAY_C
out=$(rd); expect "plain windows over it, getimage rule off: another client reads them (positive control)" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_A
out=$(rd); expect "censor, plain windows over it: another client's GetImage of the root, 0 red" "$out" err -eq 0 red_max -eq 0 frames -eq 1
out=$("$ATKT" getimage); expect "censor, plain windows over it: the trusted reader sees every red pixel" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_D
out=$(rd); expect "deny, plain windows over it: another client's GetImage of the root, 0 red" "$out" red_max -eq 0

# last, 300 plain shaped windows over the victim's window only: its visible part is then
# hundreds of small pieces, the secret area itself is bounded (it may only grow)
for s in N A D C; do replace "$s" plain over 300; done
export DISPLAY=$XDISPLAY_N
out=$(rd); expect "300 over the victim, no module: another client reads its pixels (positive control)" "$out" red_max -gt 0
ref=$(fld "$out" red_max)
export DISPLAY=$XDISPLAY_C
out=$(rd); expect "300 over the victim, getimage rule off: another client reads them (positive control)" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_A
out=$(rd); expect "censor, 300 over the victim: another client's GetImage of the root, 0 red" "$out" err -eq 0 red_max -eq 0 frames -eq 1
out=$(rd "$B_S"); expect "censor, 300 over the victim: another client's GetImage of the victim, 0 red" "$out" red_max -eq 0 frames -eq 1
out=$("$ATKT" getimage); expect "censor, 300 over the victim: the trusted reader sees every red pixel" "$out" red_max -eq "$ref"
export DISPLAY=$XDISPLAY_D
out=$(rd); expect "deny, 300 over the victim: another client's GetImage of the root, 0 red" "$out" red_max -eq 0

# the per-owner bound: the attacker's 300 secure windows in the right quarter, the
# victim raised over them (so that a bound over everything would take in the victim's
# window with the attacker's pieces), a third client's yellow windows between them and
# the victim (Y1) and over them (Y2)
for s in N A D C; do replace "$s" over right 300; done
for s in N A D C; do
  d=XDISPLAY_$s
  out=$(DISPLAY=${!d} as_nobody "$ATK" raise 200 200)
  expect "$s: the victim raised over the attacker's windows" "$out" raised -eq 1
  d=XDISPLAY_$s f=$TMP/by.$s
  for b in "510 200 80 200" "680 200 80 200"; do
    : >"$f"
    # shellcheck disable=SC2086
    DISPLAY=${!d} "$ATK" bystander $b >"$f" 2>&1 &
    BG_PIDS+=($!)
    for i in $(seq 100); do grep -q "^W=" "$f" && break; sleep 0.1; done
    grep -q "^W=" "$f" || { echo "Error: bystander on $s: $(cat "$f")" >&2; exit 1; }
  done
done
bx() { as_nobody "$ATK" box "$@" 2>&1 | tr '\n' ' '; }
for s in N C; do
  export DISPLAY=$(eval echo "\$XDISPLAY_$s")
  n=$([ "$s" = N ] && echo "no module" || echo "getimage rule off")
  out=$(rd); expect "per owner, $n: another client reads the victim's pixels (positive control)" "$out" red_max -gt 0
  out=$(bx 510 200 80 200); expect "per owner, $n: the window between the attacker's and the victim's reads in full" "$out" yellow -eq 16000
  out=$(bx 680 200 80 200); expect "per owner, $n: the window over the attacker's reads in full" "$out" yellow -eq 16000
done
export DISPLAY=$XDISPLAY_A
out=$(rd); expect "per owner, censor: another client's GetImage of the root, 0 red" "$out" err -eq 0 red_max -eq 0 frames -eq 1
out=$(bx 510 200 80 200); expect "per owner, censor: the window between the attacker's area and the victim reads in full (outside the attacker's extents)" "$out" err -eq 0 yellow -eq 16000
out=$(bx 680 200 80 200); expect "per owner, censor: the window over the attacker's windows is blackened in part (inside its extents: the bound's price, control)" "$out" err -eq 0 black -gt 0
out=$(bx 300 200 200 200); expect "per owner, censor: the victim's window reads black" "$out" err -eq 0 red -eq 0 black -eq 40000
export DISPLAY=$XDISPLAY_D
out=$(rd); expect "per owner, deny: another client's GetImage of the root, 0 red" "$out" red_max -eq 0
out=$(bx 510 200 80 200); expect "per owner, deny: the window between the attacker's area and the victim reads in full" "$out" err -eq 0 yellow -eq 16000

# verify mode: no computation of the secret area held less than the exact area, and
# some were incremental
for s in A D; do
  l=LOG_$s
  last=$(grep "verify: [0-9]* checks" "${!l}" | tail -1 || true)
  inc=$(echo "$last" | sed -n 's/.*checks (\([0-9]*\) incremental).*/\1/p')
  if grep -q "verify: the .* misses" "${!l}"; then
    bad "$s: a cached secret area missed part of the exact one: $(grep -m3 'verify: the' "${!l}" | tr '\n' ' ')"
  elif [ -z "$last" ] || [ "${inc:-0}" -eq 0 ]; then
    bad "$s: verify mode checked no incremental computation (${last:-no line})"
  else
    ok "$s: every computation of the secret area held the exact area (${last#*verify: })"
  fi
done

# the bound was applied (else this suite would not test it): refresh.c logs the count
for s in A D; do
  l=LOG_$s
  n=$(grep -o "[0-9]* regions bounded" "${!l}" | tail -1 | cut -d' ' -f1 || true)
  if [ "${n:-0}" -gt 0 ]; then
    ok "$s: the secret region was bounded ($n times; $(grep -c 'secret area computed' "${!l}") computations)"
  else
    bad "$s: the bound was never applied (log: ${n:-no line})"
  fi
done
summary
