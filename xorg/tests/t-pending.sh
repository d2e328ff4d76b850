#!/usr/bin/env bash
# CaptureShield Xorg tests: secret before the tag (rule pending). A stand-in for the daemon
# (the Trust list's probe) says it classifies new windows (root _CAPTURE_SHIELD_CLASSIFY
# = 1); an untrusted client (uid nobody) maps an ordinary 150x100 blue window. Until the
# stand-in answers (writes the window's _CAPTURE_SHIELD_POLICY: 0 not secure, 1 secure),
# untrusted reads of the screen get none of it (censor: black; deny: refused) and
# untrusted RECORD is refused, while a trusted reader (the user) sees all of it; fail
# closed: with no answer it stays so; the same when MapSubwindows of the root maps it. Its answer 0 makes it an ordinary window again; a
# window mapped while no daemon classifies is not held; the stand-in's deleting the root
# property (its clean stop) releases every held window. Positive control: the same on a
# server with the rule off (DisableRules pending), where the first untrusted read gets the
# window. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATKF=$OUT/atk-focus
ATKS=$OUT/atk-swap
for b in "$ATKF" "$ATKS" "$PROBE" "$TPROBE"; do [ -x "$b" ] || { echo "Error: $b not built" >&2; exit 1; }; done
conf() { local f=$1; shift; mod_conf "$f" "Option \"Trust\" \"$TPROBE\"" "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "pending"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule pending off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

W=; WPID=
# window: nobody maps an ordinary window (atk-focus mapnew: 150x100 blue); sets W, WPID
window() {
  local line how=${1:-mapnew}
  coproc MW { exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$ATKF" "$how" 600000; }
  WPID=$MW_PID; BG_PIDS+=("$WPID")
  read -r -t 10 line <&"${MW[0]}" || { echo "Error: the window did not map" >&2; exit 1; }
  W=${line#ready win=}
}
unwindow() { kill "$WPID" 2>/dev/null || true; wait "$WPID" 2>/dev/null || true; }
# blue pixels nobody reads of the screen, and the trusted reader (the user's view)
untrusted() { fld "$(as_nobody "$PROBE" capture getimage 1 2>&1 | tr '\n' ' ')" blue_min; }
trusted() { fld "$("$TPROBE" capture getimage 1 2>&1 | tr '\n' ' ')" blue_min; }
record() { fld "$(as_nobody "$ATKS" --host read "$W" 2>&1 | tr '\n' ' ')" record; }
classify() { "$TPROBE" policy classify "$1" >/dev/null; }
answer() { "$TPROBE" policy set "$W" "$1" >/dev/null; }
FULL=15000

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  # 1. no daemon classifies: a new window is an ordinary one at once
  window
  expect "$srv: no daemon classifies: nobody's new window reads at once" "u=$(untrusted)" u = $FULL
  unwindow
  # 2. the daemon classifies: held until it answers
  classify 1
  window
  u=$(untrusted); t=$(trusted); r=$(record)
  # 2b. the same window mapped by MapSubwindows of the root
  unwindow; window mapsub
  us=$(untrusted)
  unwindow; window
  if [ $srv = C ]; then
    expect "$srv (control, pending off): the new window reads before the daemon answers, MapWindow and MapSubwindows" \
      "u=$u t=$t us=$us" u = $FULL t = $FULL us = $FULL
    unwindow; classify 0
    continue
  fi
  expect "$srv: mapped by MapSubwindows of the root, the new window is held too" "us=$us" us = 0
  expect "$srv: the new window before the daemon answered: untrusted 0, untrusted RECORD refused, the user sees it" \
    "u=$u t=$t record=$r" u = 0 t = $FULL record = 10
  sleep 1
  expect "$srv: fail closed: 1 s later, still no answer, still 0" "u=$(untrusted)" u = 0
  # 3. the daemon's answer: not secure
  answer 0
  expect "$srv: the daemon answered 0: an ordinary window again" "u=$(untrusted) record=$(record)" u = $FULL record -ne 10
  unwindow
  # 4. answer: secure
  window
  answer 1
  expect "$srv: the daemon answered 1: secure" "u=$(untrusted)" u = 0
  unwindow
  # 5. the daemon's clean stop (root property deleted) releases every held window
  window
  expect "$srv: held again" "u=$(untrusted)" u = 0
  classify 0
  expect "$srv: the daemon stopped classifying: the held window is released" "u=$(untrusted)" u = $FULL
  unwindow
done
summary
