#!/usr/bin/env bash
# CaptureShield Xorg tests: the CAPTURESHIELD protocol and the daemon's channels. QueryVersion,
# SetProtection, the _CAPTURE_SHIELD_POLICY tag (set by trusted clients only), grants (one X
# client's, gone with it), CaptureNotify events to a trusted listener (kind 6 with the secure
# mask), and the daemon's own channels (its selection, root property, KillClient,
# _CAPTURE_SHIELD_COMMAND) refused to untrusted clients; on a server with the rule daemon off
# (DisableRules daemon) those are allowed. CS_MODDIR=DIR runs the suite with the module built
# in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
for b in "$PROBE" "$OUT/csprobe-trusted" "$COUNT" "$OUT/libcaptureshield.so"; do
  [ -x "$b" ] || [ -f "$b" ] || { echo "Error: $b not built (make xorg-module)" >&2; exit 1; }
done

# Servers: A censor, C with the rule daemon off (as in t-attacks.sh, every attack rule off)
TRUST="Option \"Trust\" \"$TPROBE:/nonexistent/picom\""
# server A trusts the probe through a symlink: the module resolves it (/proc/PID/exe is resolved)
ln -s "$TPROBE" "$TMP/trusted-link"
mod_conf "$TMP/A.conf" "Option \"Trust\" \"$TMP/trusted-link:/nonexistent/picom\""
mod_conf "$TMP/C.conf" "$TRUST" 'Option "DisableRules" "forcedbg,property,pixmap,namewindowpixmap,dbe,daemon,frame,title,overlay,ownsecure,resources,stale,taint"'
# A logs at verbosity 5: the module's "resource hook armed/disarmed" lines. A runs without
# the SECURITY extension, whose resource callback is otherwise always registered: there the
# module's arming creates and deletes the XACE callback list itself (the others keep it)
start_xorg A "$TMP/A.conf" -logverbose 5 -extension SECURITY
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, rules-off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

VIS=37500   # visible part of the 200x200 secure window: the blue 100x100 window covers 50x50 of it
BLUEPX=10000

export DISPLAY=$XDISPLAY_A
start_victim

# trust protocol
out=$("$PROBE" proto version)
expect "QueryVersion (untrusted)" "$out" version = 1.2 mode -eq 0 trust -eq 0
out=$("$TPROBE" proto version)
expect "QueryVersion (Trust list through a symlink)" "$out" trust -eq 2

# SetProtection: paused, nobody's reads of secure windows are censored; the tag rule stays
out=$("$PROBE" proto protect 0); expect "SetProtection from an untrusted client: BadAccess" "$out" err -eq 10
out=$("$TPROBE" proto protect 2); expect "SetProtection 2: BadValue" "$out" err -eq 2
out=$("$TPROBE" proto protect 0); expect "SetProtection 0 by a trusted client" "$out" err -eq 0
for k in getimage copyarea render; do
  out=$("$PROBE" capture $k 1); expect "protection off: untrusted $k root sees every secret pixel" "$out" red_max -eq $VIS
done
out=$("$PROBE" capture getimage 1 "$V_S"); expect "protection off: untrusted getimage on the secure window" "$out" red_max -eq $VIS
out=$("$PROBE" attack untag "$V_S"); expect "protection off: the tag rule stays on" "$out" delete_err -eq 10 tag -eq 1
out=$("$PROBE" daemon selection); expect "protection off: the daemon defences stay on" "$out" err -eq 10
out=$("$TPROBE" proto protect 1); expect "SetProtection 1" "$out" err -eq 0
out=$("$PROBE" capture getimage 1); expect "protection on again: black" "$out" red_max -eq 0 black_min -eq $VIS

# _CAPTURE_SHIELD_POLICY: the daemon's tag, set by trusted clients only
UNION=47500 # the secure window's 40000 pixels plus the blue window's 10000, 2500 shared
out=$("$TPROBE" policy set "$V_A" 1); expect "a trusted client tags another client's window with _CAPTURE_SHIELD_POLICY" "$out" err -eq 0
out=$("$PROBE" capture getimage 1 "$V_A"); expect "policy-tagged window: untrusted getimage all black" "$out" blue_min -eq 0 black_min -eq $BLUEPX
out=$("$PROBE" capture getimage 1); expect "policy-tagged window: untrusted root getimage blacks it too" "$out" red_max -eq 0 blue_min -eq 0 black_min -eq $UNION
out=$("$PROBE" capture copyarea 1); expect "policy-tagged window: untrusted root copyarea" "$out" red_max -eq 0 blue_min -eq 0 black_min -eq $UNION
out=$("$PROBE" policy try "$V_A"); expect "an untrusted client cannot delete or clear the policy tag" "$out" delete_err -eq 10 change_err -eq 10 tag -eq 1
out=$("$PROBE" policy set "$V_A" 1); expect "an untrusted client cannot set the policy tag" "$out" err -eq 10
out=$("$TPROBE" policy set "$V_A" 0); expect "the trusted client clears the policy tag" "$out" err -eq 0
out=$("$PROBE" capture getimage 1 "$V_A"); expect "policy tag cleared: the window reads normally again" "$out" blue_min -eq $BLUEPX black_max -eq 0
out=$("$PROBE" proto grant "$V_BASE")
expect "Grant from an untrusted client: BadAccess" "$out" err -eq 10
out=$("$PROBE" proto select)
expect "SelectInput from an untrusted client: BadAccess" "$out" err -eq 10
out=$("$PROBE" proto dri2 "$V_S")
expect "DRI2 CreateDrawable on the secure window: BadAccess" "$out" err -eq 10

# grants belong to one X client
mkfifo "$TMP/sin" "$TMP/sout"
"$PROBE" session <"$TMP/sin" >"$TMP/sout" &
SESS_PID=$!; BG_PIDS+=("$SESS_PID")
exec 7>"$TMP/sin" 8<"$TMP/sout"
sess() { echo "$1" >&7; read -r -t 10 line <&8; echo "$line"; }
base=$(fld "$(sess base)" base)
out=$(sess cap); expect "session before grant" "$out" red_max -eq 0
out=$("$TPROBE" proto grant "$base"); expect "Grant by a trusted client" "$out" err -eq 0
out=$("$PROBE" proto trust "$base"); expect "GetClientTrust: granted" "$out" trust -eq 3
out=$(sess cap); expect "granted client sees the secure window" "$out" red_max -eq $VIS
out=$("$TPROBE" proto revoke "$base"); expect "Revoke" "$out" err -eq 0
out=$(sess cap); expect "revoked client sees black" "$out" red_max -eq 0 black_min -eq $VIS
"$TPROBE" proto grant "$base" >/dev/null
out=$(sess cap); expect "granted again" "$out" red_max -eq $VIS
pwin=$(fld "$(sess win)" win); "$TPROBE" policy set "$pwin" 1 >/dev/null
out=$(sess policy); expect "a granted client cannot clear the policy tag of its own window" "$out" delete_err -eq 10 change_err -eq 10 tag -eq 1
out=$(sess reconnect); nbase=$(fld "$out" base)
pwin=$(fld "$(sess win)" win)
out=$("$TPROBE" policy set "$pwin" 1); expect "trusted client tags an untrusted client's own window" "$out" err -eq 0
out=$(sess policy); expect "the window's owner cannot delete or clear the policy tag" "$out" delete_err -eq 10 change_err -eq 10 tag -eq 1
out=$("$PROBE" proto trust "$nbase"); expect "reconnected client (base $nbase) holds no grant" "$out" trust -eq 0
out=$(sess cap); expect "reconnected client sees black" "$out" red_max -eq 0 black_min -eq $VIS
echo quit >&7; wait "$SESS_PID" 2>/dev/null || true; exec 7>&- 8<&-

# events for a trusted daemon
"$TPROBE" listen 1 >"$TMP/events1" &
LPID=$!; BG_PIDS+=("$LPID")
for i in $(seq 50); do grep -q ready "$TMP/events1" && break; sleep 0.1; done
"$PROBE" capture getimage 1 >/dev/null
for i in $(seq 50); do grep -q event "$TMP/events1" && break; sleep 0.1; done
out=$(grep event "$TMP/events1" || echo none)
expect "CaptureNotify to a trusted listener (censored GetImage)" "$out" kind -eq 0 major -eq 73
kill "$LPID" 2>/dev/null || true
# the same tool run again and again: each run's censored read is reported (a new client can
# get the last one's ClientPtr and sends its GetImage at the same sequence number)
"$TPROBE" listen 10 >"$TMP/events10" &
LPID=$!; BG_PIDS+=("$LPID")
for i in $(seq 300); do grep -q ready "$TMP/events10" && break; sleep 0.1; done
for i in $(seq 10); do "$PROBE" capture getimage 1 >/dev/null; done
for i in $(seq 300); do [ "$(grep -c "kind=0" "$TMP/events10")" -ge 10 ] && break; sleep 0.1; done
n=$(grep -c "kind=0" "$TMP/events10" || true)
[ "$n" -eq 10 ] && ok "10 runs of the same capture tool: 10 CaptureNotify events" || bad "10 runs of the same capture tool: $n CaptureNotify events"
kill "$LPID" 2>/dev/null || true

# protocol 1.2: a listener that selected the secure mask learns each window that becomes secure
# (kind 6); one that did not gets none (its first event is the censored read below)
stop_victim
"$TPROBE" listen 1 3 >"$TMP/events6" &
L6=$!; BG_PIDS+=("$L6")
"$TPROBE" listen 1 1 >"$TMP/events7" &
L7=$!; BG_PIDS+=("$L7")
for i in $(seq 300); do grep -q ready "$TMP/events6" && grep -q ready "$TMP/events7" && break; sleep 0.1; done
start_victim
for i in $(seq 300); do grep -q event "$TMP/events6" && break; sleep 0.1; done
out=$(grep event "$TMP/events6" || echo none)
expect "kind 6 (a window became secure) to a listener with the secure mask" "$out" kind -eq 6 drawable = "$V_S" major -eq 18
cap=$("$PROBE" capture getimage 1)
for i in $(seq 300); do grep -q event "$TMP/events7" && break; sleep 0.1; done
out=$(grep event "$TMP/events7" || echo "none: listener [$(tr '\n' ' ' <"$TMP/events7")] capture [$cap]")
expect "no kind 6 without the secure mask (first event: the censored read)" "$out" kind -eq 0 major -eq 73
out=$("$TPROBE" proto select 4); expect "SelectInput with an unknown mask bit: BadValue" "$out" err -eq 2
kill "$L6" "$L7" 2>/dev/null || true

# the shield's own channels (for the daemon)
# a trusted client (the daemon's stand-in) driven through fifos
start_tsess() {
  rm -f "$TMP/tin" "$TMP/tout"; mkfifo "$TMP/tin" "$TMP/tout"
  "$TPROBE" session <"$TMP/tin" >"$TMP/tout" &
  TSESS_PID=$!; BG_PIDS+=("$TSESS_PID")
  exec 5>"$TMP/tin" 6<"$TMP/tout"
  tbase=$(fld "$(tsess base)" base); twin=$(fld "$(tsess win)" win)
}
stop_tsess() { echo quit >&5 || true; exec 5>&- 6<&-; wait "$TSESS_PID" 2>/dev/null || true; }
tsess() { echo "$1" >&5; read -r -t 10 line <&6; echo "$line"; }
start_tsess
"$TPROBE" listen 4 >"$TMP/events3" &
LPID=$!; BG_PIDS+=("$LPID")
for i in $(seq 50); do grep -q ready "$TMP/events3" && break; sleep 0.1; done
out=$("$PROBE" daemon selection); expect "untrusted SetSelectionOwner _CAPTURE_SHIELD_S0: BadAccess" "$out" err -eq 10
out=$("$TPROBE" daemon selection); expect "trusted SetSelectionOwner _CAPTURE_SHIELD_S0: allowed" "$out" err -eq 0
out=$("$PROBE" daemon rootprop); expect "untrusted change of root property _CAPTURE_SHIELD_POLICY: BadAccess" "$out" err -eq 10
out=$("$PROBE" daemon kill "$tbase"); expect "untrusted KillClient of a trusted client: BadAccess" "$out" err -eq 10
"$PROBE" daemon sendevent "$twin" >/dev/null
out=$(tsess events); expect "untrusted _CAPTURE_SHIELD_COMMAND to a trusted client's window: dropped" "$out" client_messages -eq 0
"$TPROBE" daemon sendevent "$twin" >/dev/null
out=$(tsess events); expect "the same from a trusted client: delivered" "$out" client_messages -eq 1
out=$("$PROBE" daemon sendevent "$V_S"); expect "the same ClientMessage to an untrusted client's window: allowed" "$out" err -eq 0
out=$(tsess base); expect "trusted client still connected" "$out" base = "$tbase"
for i in $(seq 50); do [ "$(grep -c event "$TMP/events3")" -ge 4 ] && break; sleep 0.1; done
kill "$LPID" 2>/dev/null || true
defev() { grep "kind=$1 " "$TMP/events3" | head -1 || true; }
out=$(defev 2); expect "CaptureNotify kind 2 (refused selection) to a trusted listener" "$out" kind -eq 2 major -eq 22
[ -n "$out" ] && [ "$(fld "$out" drawable)" != 0x0 ] && [ "$(fld "$out" reader)" != 0x0 ] && ok "kind 2: reader and selection atom set" || bad "kind 2 fields [$out]"
out=$(defev 4); expect "CaptureNotify kind 4 (refused root property)" "$out" kind -eq 4 major -eq 18
out=$(defev 3); expect "CaptureNotify kind 3 (refused KillClient)" "$out" kind -eq 3 major -eq 113 drawable = "$tbase"
out=$(defev 5); expect "CaptureNotify kind 5 (dropped _CAPTURE_SHIELD_COMMAND)" "$out" kind -eq 5 major -eq 25 drawable = "$twin"
stop_tsess
stop_victim

export DISPLAY=$XDISPLAY_C
out=$("$PROBE" daemon selection); expect "rule daemon off: untrusted SetSelectionOwner allowed" "$out" err -eq 0
out=$("$PROBE" daemon rootprop); expect "rule daemon off: root property change allowed" "$out" err -eq 0
start_tsess
"$PROBE" daemon sendevent "$twin" >/dev/null
out=$(tsess events); expect "rule daemon off: untrusted _CAPTURE_SHIELD_COMMAND delivered" "$out" client_messages -eq 1
out=$("$PROBE" daemon kill "$tbase"); expect "rule daemon off: KillClient of a trusted client allowed" "$out" err -eq 0
exec 5>&- 6<&-; wait "$TSESS_PID" 2>/dev/null || true

summary
