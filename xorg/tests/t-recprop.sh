#!/bin/bash
# CaptureShield Xorg tests, rules record, properties and wmtitle: RECORD, and the titles and other
# properties of secure windows. Attacks (atk-recprop.c) by an untrusted client, as uid
# nobody and as the same uid, on a censor-mode and a deny-mode server; positive controls on
# servers with the rules off (DisableRules record, properties, wmtitle), where each leaks.
# CS_MODDIR=DIR runs the suite against another build of the module (e.g. main's, to see the
# attacks work there).
set -euo pipefail
. "$(dirname "$0")/t-lib.sh"
ATK=$OUT/atk-recprop
[ -x "$ATK" ] || { echo "Error: $ATK not built (make probes)" >&2; exit 1; }
TATK=$(trusted_copy "$ATK" atk-recprop-trusted)   # the same program at a path the Trust list names
OPENBOX=$(readlink -f "$(command -v openbox)")
T24="passwords.kdbx - KeePass"    # atk-recprop act's title (24 bytes)
T21="test.kdbx - KeePassXC"       # atk-recprop obapp's title (21 bytes)

# servers: A censor, D deny (openbox untrusted), OA/OD the same with openbox trusted,
# R rules off (openbox untrusted), RO rules off (openbox trusted)
OFF='Option "DisableRules" "record,properties,wmtitle"'
mod_conf "$TMP/A.conf" "Option \"Trust\" \"$TATK:$TPROBE\""
mod_conf "$TMP/D.conf" "Option \"Trust\" \"$TATK:$TPROBE\"" 'Option "Mode" "deny"'
mod_conf "$TMP/OA.conf" "Option \"Trust\" \"$TATK:$TPROBE:$OPENBOX\""
mod_conf "$TMP/OD.conf" "Option \"Trust\" \"$TATK:$TPROBE:$OPENBOX\"" 'Option "Mode" "deny"'
mod_conf "$TMP/R.conf" "Option \"Trust\" \"$TATK:$TPROBE\"" "$OFF"
mod_conf "$TMP/RO.conf" "Option \"Trust\" \"$TATK:$TPROBE:$OPENBOX\"" "$OFF"
for s in A D OA OD R RO; do start_xorg "$s" "$TMP/$s.conf"; done

# recorder WHO...: starts `atk-recprop record` (as WHO: the command prefix) in the
# background, returns once it is recording or was refused; rec_end: waits for it, sets out
recorder() {
  local i
  rm -f "$TMP/rec.out"
  "$@" "$ATK" record 10 >"$TMP/rec.out" &
  REC_PID=$!
  for i in $(seq 200); do grep -q ready "$TMP/rec.out" 2>/dev/null && return 0; sleep 0.05; done
  echo "Error: the recorder did not start" >&2
  exit 1
}
trecorder() {
  local i
  rm -f "$TMP/rec.out"
  "$TATK" record 10 >"$TMP/rec.out" &
  REC_PID=$!
  for i in $(seq 200); do grep -q ready "$TMP/rec.out" 2>/dev/null && return 0; sleep 0.05; done
  echo "Error: the trusted recorder did not start" >&2
  exit 1
}
rec_end() { wait "$REC_PID" || true; out=$(tail -1 "$TMP/rec.out"); }
# bg_line FILE CMD...: runs CMD in the background, its output in FILE, until its first
# line (30 s at most); sets BG_LAST (not a coproc: bash closes a newer coproc's pipe when
# it reaps an older one, which made starts fail now and then)
bg_line() {
  local f=$1 i; shift
  rm -f "$f"
  "$@" >"$f" &
  BG_LAST=$!; BG_PIDS+=("$BG_LAST")
  for i in $(seq 300); do [ -f "$f" ] && [ "$(wc -l <"$f")" -ge 1 ] && return 0; sleep 0.1; done
  return 1
}
# granted_recorder: an untrusted recorder whose connection a trusted client grants trust
# before it creates and enables its context (a window is secure), then revokes
granted_recorder() {
  local i base
  rm -f "$TMP/rec.in" "$TMP/rec.out"; mkfifo "$TMP/rec.in"
  "$ATK" record 10 hold <"$TMP/rec.in" >"$TMP/rec.out" &
  REC_PID=$!
  exec 7>"$TMP/rec.in"
  for i in $(seq 200); do grep -q base= "$TMP/rec.out" 2>/dev/null && break; sleep 0.05; done
  base=$(fld "$(head -1 "$TMP/rec.out")" base)
  "$TPROBE" proto grant "$base" >/dev/null
  echo go >&7
  for i in $(seq 200); do grep -q ready "$TMP/rec.out" 2>/dev/null && break; sleep 0.05; done
  "$TPROBE" proto revoke "$base" >/dev/null
  exec 7>&-
}
# act_stay: a long-lived victim (atk-recprop act stay); sets S
act_stay() {
  bg_line "$TMP/act.out" "$ATK" act stay || { echo "Error: the victim did not start" >&2; exit 1; }
  ACT_PID_=$BG_LAST
  eval "$(head -1 "$TMP/act.out")"
}
act_stop() { kill "$ACT_PID_" 2>/dev/null || true; wait "$ACT_PID_" 2>/dev/null || true; }
# start_openbox / stop_openbox as in t-frames.sh: openbox frames a secure window titled T21
# (atk-recprop obapp; sets O_S, O_F: the window and its frame)
start_openbox() {
  local i
  mkdir -p "$TMP/home"
  HOME=$TMP/home openbox --sm-disable >"$TMP/openbox.log" 2>&1 &
  OB_PID=$!; BG_PIDS+=("$OB_PID")
  # ready once it owns WM_S0 and holds SubstructureRedirect on the root (it takes WM_S0
  # first: an application mapped in between was sometimes never framed)
  for i in $(seq 100); do
    [ "$("$PROBE" frame wm)" != owner=0x0 ] && [ "$("$ATK" rootmask)" = redirect=1 ] && break
    sleep 0.1
  done
  bg_line "$TMP/obapp.out" "$ATK" obapp ||
    { echo "Error: openbox did not frame the window" >&2; tail -5 "$TMP/openbox.log" >&2; xwininfo -root -children >&2; ps -o pid,stat,wchan:30,cmd -p "$OB_PID" >&2; grep -i "captureshield.*client\|error" "$TMP"/*.log | tail -8 >&2; exit 1; }
  OBAPP_PID_=$BG_LAST
  eval "$(head -1 "$TMP/obapp.out" | tr ' ' '\n' | sed 's/^/O_/')"
}
stop_openbox() {
  kill "$OBAPP_PID_" "$OB_PID" 2>/dev/null || true
  wait "$OBAPP_PID_" "$OB_PID" 2>/dev/null || true
}
# ob_copied: waits (up to 5 s) until openbox has set _OB_APP_TITLE on the window (read by
# the trusted client, which reads every property); prints the title bytes in it
ob_copied() {
  local i out
  for i in $(seq 50); do
    out=$("$TATK" props "$T21" "$O_S" _OB_APP_TITLE)
    [ "$(fld "$out" _OB_APP_TITLE)" -gt 0 ] && break
    sleep 0.1
  done
  fld "$out" _OB_APP_TITLE
}

# protected SERVER MODE: every attack gets nothing
protected() {
  local m=$2 out
  export DISPLAY=$1
  # ---- RECORD (rule record) ----
  # a context enabled while no window is secure; the victim tags its window, then sets its
  # title, puts 40,000 red pixels, draws the title: the module frees the context at the tag
  recorder as_nobody; "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD enabled before the tag, as nobody: context ended at the tag, 0 title bytes, 0 pixels" "$out" title -eq 0 pixels -eq 0 ended -eq 1
  recorder env; "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD enabled before the tag, same uid: 0 title bytes, 0 pixels" "$out" title -eq 0 pixels -eq 0 ended -eq 1
  act_stay
  recorder as_nobody; "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD while a window is secure, as nobody: refused (BadAccess), 0 title bytes, 0 pixels" "$out" enabled -eq 0 err -eq 10 title -eq 0 pixels -eq 0
  recorder env; "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD while a window is secure, same uid: refused, 0 title bytes, 0 pixels" "$out" enabled -eq 0 err -eq 10 title -eq 0 pixels -eq 0
  trecorder; "$ATK" act >/dev/null; rec_end
  expect "$m: a trusted client still records (title, 40,000 pixels)" "$out" enabled -eq 1 title -eq 24 pixels -eq 40000 marker -eq 1
  # protection paused by the daemon: RECORD is allowed; resumed: the context ends
  "$TPROBE" proto protect 0 >/dev/null
  recorder as_nobody
  "$TPROBE" proto protect 1 >/dev/null
  "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD enabled while protection was paused: ended when it resumed, 0 title bytes, 0 pixels" "$out" enabled -eq 1 ended -eq 1 title -eq 0 pixels -eq 0
  # a client granted trust enables RECORD while a window is secure; the grant is revoked:
  # the context ends
  granted_recorder
  "$ATK" act >/dev/null; rec_end
  expect "$m: RECORD enabled while granted, grant revoked: ended, 0 title bytes, 0 pixels" "$out" enabled -eq 1 ended -eq 1 title -eq 0 pixels -eq 0
  # ---- properties (rules properties, wmtitle) ----
  out=$(as_nobody "$ATK" props "$T24" "$S" WM_NAME _KEEPASS_DOCUMENT)
  expect "$m: GetProperty of the title and of an own property naming the document: 0 title bytes" "$out" WM_NAME -eq 0 _KEEPASS_DOCUMENT -eq 0
  out=$("$TATK" props "$T24" "$S" WM_NAME _KEEPASS_DOCUMENT)
  expect "$m: a trusted client reads them" "$out" WM_NAME -eq 24 _KEEPASS_DOCUMENT -eq 24
  out=$(as_nobody "$ATK" list "$S" _KEEPASS_DOCUMENT)
  expect "$m: ListProperties leaves out the properties not on the allow-list" "$out" listed -eq 0
  out=$(as_nobody "$ATK" list "$S" WM_CLASS)
  expect "$m: ListProperties shows allow-listed ones (WM_CLASS)" "$out" listed -eq 1
  out=$(as_nobody "$ATK" getdel "$T24" "$S" _KEEPASS_DOCUMENT)
  expect "$m: GetProperty with delete: 0 title bytes" "$out" _KEEPASS_DOCUMENT -eq 0
  out=$("$TATK" props "$T24" "$S" _KEEPASS_DOCUMENT)
  expect "$m: ... and the property was not deleted" "$out" _KEEPASS_DOCUMENT -eq 24
  out=$(as_nobody "$ATK" wm "$T24" "$S")
  expect "$m: an untrusted client becomes the window manager (none runs): 0 title bytes" "$out" redirect_err -eq 0 wm_name -eq 0
  # each rotation on a fresh victim (where it works, it moves the title away)
  out=$(as_nobody "$ATK" rotate "$T24" "$S" _RECPROP_STASH)
  expect "$m: RotateProperties WM_NAME into an own property: BadAccess, 0 title bytes" "$out" err -eq 10 stash -eq 0
  act_stop; act_stay
  out=$(as_nobody "$ATK" rotate "$T24" "$S" WM_CLASS)
  expect "$m: RotateProperties WM_NAME into WM_CLASS (allow-listed): BadAccess, 0 title bytes" "$out" err -eq 10 stash -eq 0
  act_stop
}

# the untrusted openbox: it never learns the title, and whoever kills it and takes its
# place does not either
ob_untrusted() {
  local m=$2 out
  export DISPLAY=$1
  start_openbox
  out=$(as_nobody "$ATK" props "$T21" "$O_S" _OB_APP_TITLE WM_NAME _NET_WM_NAME)
  expect "$m: openbox untrusted: its copy _OB_APP_TITLE and the titles read 0 title bytes" "$out" _OB_APP_TITLE -eq 0 WM_NAME -eq 0 _NET_WM_NAME -eq 0
  out=$("$TATK" props "$T21" "$O_S" _OB_APP_TITLE)
  expect "$m: openbox untrusted never read the title (its _OB_APP_TITLE, read by a trusted client, has none)" "$out" _OB_APP_TITLE -eq 0
  out=$(as_nobody "$ATK" wm "$T21" "$O_S" "$O_F")
  expect "$m: kill openbox, become the window manager: 0 title bytes" "$out" redirect_err -eq 0 wm_name -eq 0 net_wm_name -eq 0
  stop_openbox
}

# the trusted openbox: it reads the title and copies it into _OB_APP_TITLE on the window,
# which other clients cannot read
ob_trusted() {
  local m=$2 out n
  export DISPLAY=$1
  start_openbox
  n=$(ob_copied)
  [ "$n" = 21 ] && ok "$m: openbox trusted reads the title, copies it into _OB_APP_TITLE (21 bytes)" ||
    bad "$m: openbox trusted: _OB_APP_TITLE has $n title bytes, wanted 21"
  out=$(as_nobody "$ATK" props "$T21" "$O_S" _OB_APP_TITLE WM_NAME _NET_WM_NAME)
  expect "$m: openbox trusted: its copy _OB_APP_TITLE reads 0 title bytes (as nobody)" "$out" _OB_APP_TITLE -eq 0 WM_NAME -eq 0 _NET_WM_NAME -eq 0
  out=$("$ATK" props "$T21" "$O_S" _OB_APP_TITLE)
  expect "$m: openbox trusted: _OB_APP_TITLE reads 0 title bytes (same uid)" "$out" _OB_APP_TITLE -eq 0
  stop_openbox
}

protected "$XDISPLAY_A" censor
protected "$XDISPLAY_D" deny
ob_untrusted "$XDISPLAY_A" censor
ob_untrusted "$XDISPLAY_D" deny
ob_trusted "$XDISPLAY_OA" censor
ob_trusted "$XDISPLAY_OD" deny
grep -q "RECORD context .* freed" "$LOG_A" && ok "censor: the freed RECORD context is logged" ||
  bad "censor: no log line for the freed RECORD context"

########## positive controls: the rules off, each attack leaks ##########
export DISPLAY=$XDISPLAY_R
m="rules record,properties,wmtitle off"
recorder as_nobody; "$ATK" act >/dev/null; rec_end
expect "$m: RECORD enabled before the tag gets the title and 40,000 pixels" "$out" title -eq 24 pixels -eq 40000 marker -eq 1
act_stay
recorder as_nobody; "$ATK" act >/dev/null; rec_end
expect "$m: RECORD while a window is secure gets the title and 40,000 pixels" "$out" enabled -eq 1 title -eq 24 pixels -eq 40000
granted_recorder; "$ATK" act >/dev/null; rec_end
expect "$m: RECORD enabled while granted keeps recording after the revoke" "$out" enabled -eq 1 title -eq 24 pixels -eq 40000
out=$(as_nobody "$ATK" props "$T24" "$S" _KEEPASS_DOCUMENT)
expect "$m: an own property naming the document is readable" "$out" _KEEPASS_DOCUMENT -eq 24
out=$(as_nobody "$ATK" list "$S" _KEEPASS_DOCUMENT)
expect "$m: ListProperties shows it" "$out" listed -eq 1
out=$(as_nobody "$ATK" wm "$T24" "$S")
expect "$m: the untrusted window manager reads the title" "$out" redirect_err -eq 0 wm_name -eq 24
out=$(as_nobody "$ATK" rotate "$T24" "$S" WM_CLASS)
expect "$m: RotateProperties WM_NAME into WM_CLASS gives the title" "$out" err -eq 0 stash -eq 24
act_stop
act_stay
out=$(as_nobody "$ATK" rotate "$T24" "$S" _RECPROP_STASH)
expect "$m: RotateProperties WM_NAME into an own property gives the title" "$out" err -eq 0 stash -eq 24
act_stop
act_stay
out=$(as_nobody "$ATK" getdel "$T24" "$S" _KEEPASS_DOCUMENT)
expect "$m: GetProperty with delete gives the own property" "$out" _KEEPASS_DOCUMENT -eq 24
act_stop
start_openbox
out=$(as_nobody "$ATK" props "$T21" "$O_S" _OB_APP_TITLE)
expect "$m: openbox untrusted copies the title into _OB_APP_TITLE, readable" "$out" _OB_APP_TITLE -eq 21
out=$(as_nobody "$ATK" wm "$T21" "$O_S" "$O_F")
expect "$m: kill openbox, become the window manager: the title" "$out" redirect_err -eq 0 wm_name -eq 21
stop_openbox
export DISPLAY=$XDISPLAY_RO
start_openbox
ob_copied >/dev/null
out=$(as_nobody "$ATK" props "$T21" "$O_S" _OB_APP_TITLE)
expect "$m: openbox trusted: _OB_APP_TITLE readable" "$out" _OB_APP_TITLE -eq 21
stop_openbox

summary
