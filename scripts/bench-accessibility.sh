#!/usr/bin/env bash
# What accessibility costs the applications (docs/performance.md, "Accessibility bus cost"):
# CPU and memory (RSS) of a GTK app (zenity --password) and Qt apps (KeePassXC's welcome
# screen; pinentry-qt) with accessibility off and on, on a private Xvfb, session bus and
# accessibility bus. "on" is what the daemon does: it follows the accessibility bus
# (`shieldctl watch`, accessibility.passwordFields) and sets org.a11y.Status.IsEnabled, so
# GTK 3 keeps its bridge (off: NO_AT_BRIDGE=1) and Qt turns its own on (KeePassXC;
# pinentry-qt ignores IsEnabled here and is measured with QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1).
# Figures, never asserted: RSS once the window is up and settled, CPU time used until then
# (start-up), CPU time over IDLE seconds after (idle; the daemon rescans once a second),
# and the daemon's own CPU over the same idle time. Medians of RUNS runs.
# Usage: scripts/bench-accessibility.sh [path/to/shieldctl]   (RUNS=3, IDLE=10)
set -euo pipefail
shieldctl=${1:-.build/release/shieldctl}
runs=${RUNS:-3}
idle=${IDLE:-10}
settle=3
tick=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/captureshield-a11ybench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cpu_ms() { awk -v t="$tick" '{print int(($14 + $15) * 1000 / t)}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

cat >"$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
  "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=$work/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/></policy></busconfig>
EOF
dbus-daemon --config-file="$work/bus.conf" --nofork >/dev/null 2>&1 &
pids+=($!)
export DBUS_SESSION_BUS_ADDRESS="unix:path=$work/bus"
mkdir -m 700 "$work/run"
export XDG_RUNTIME_DIR="$work/run" HOME="$work" GDK_BACKEND=x11 QT_QPA_PLATFORM=xcb
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 3>"$work/display" &
pids+=($!)
for _ in $(seq 150); do [ -s "$work/display" ] && break; sleep 0.1; done
display=$(cat "$work/display")
[ -n "$display" ] || { echo "bench-accessibility: Xvfb did not start" >&2; exit 1; }
export DISPLAY=":$display"
/usr/libexec/at-spi-bus-launcher --launch-immediately >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do
  dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress >/dev/null 2>&1 && break
  sleep 0.1
done
printf 'SETDESC Passphrase\nGETPIN\n' >"$work/pin"

set_enabled() {
  dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.freedesktop.DBus.Properties.Set \
    string:org.a11y.Status string:IsEnabled "variant:boolean:$1" >/dev/null
}

# measure NAME CLASS MODE COMMAND...: one run; prints "rss startup idle daemon".
measure() {
  local class=$1 mode=$2
  shift 2
  local daemon=""
  set_enabled false
  if [ "$mode" = on ]; then
    "$shieldctl" watch --policy "$work/policy.json5" >/dev/null 2>&1 &
    daemon=$!
    for _ in $(seq 100); do  # until the daemon has turned accessibility on
      dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.freedesktop.DBus.Properties.Get \
        string:org.a11y.Status string:IsEnabled 2>/dev/null | grep -q 'boolean true' && break
      sleep 0.05
    done
  fi
  if [ "$mode" = off ]; then
    NO_AT_BRIDGE=1 "$@" <"$work/pin" >/dev/null 2>&1 &
  else
    "$@" <"$work/pin" >/dev/null 2>&1 &
  fi
  local app=$!
  xdotool search --sync --onlyvisible --class "$class" >/dev/null 2>&1 || true
  sleep "$settle"
  local rss start d0 a0
  rss=$(rss_kb "$app")
  local a11y onbus
  a11y=$(dbus-send --session --print-reply=literal --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress | tr -d ' ')
  onbus=$(dbus-send --bus="$a11y" --print-reply --dest=org.a11y.atspi.Registry /org/a11y/atspi/accessible/root \
    org.a11y.atspi.Accessible.GetChildren 2>/dev/null | grep -c 'string ":' || true)
  start=$(cpu_ms "$app")
  d0=0
  [ -n "$daemon" ] && d0=$(cpu_ms "$daemon")
  sleep "$idle"
  a0=$(($(cpu_ms "$app") - start))
  local dd=0
  [ -n "$daemon" ] && dd=$(($(cpu_ms "$daemon") - d0))
  kill "$app" 2>/dev/null || true
  wait "$app" 2>/dev/null || true
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  echo "$rss $start $a0 $dd $onbus"
}

echo '{version: 1, accessibility: {passwordFields: true}}' >"$work/policy.json5"
chmod 644 "$work/policy.json5"

printf '%-36s %-4s %7s %10s %12s %16s %16s\n' app a11y "on bus" "RSS (MB)" "start (ms)" "idle (ms/${idle}s)" \
  "daemon (ms/${idle}s)"
row() {
  local name=$1 class=$2 mode=$3
  shift 3
  local out=()
  for _ in $(seq "$runs"); do out+=("$(measure "$class" "$mode" "$@")"); done
  local rss start idlecpu dcpu
  rss=$(printf '%s\n' "${out[@]}" | awk '{print $1}' | median)
  start=$(printf '%s\n' "${out[@]}" | awk '{print $2}' | median)
  idlecpu=$(printf '%s\n' "${out[@]}" | awk '{print $3}' | median)
  dcpu=$(printf '%s\n' "${out[@]}" | awk '{print $4}' | median)
  onbus=$(printf '%s\n' "${out[@]}" | awk '{print $5}' | median)
  printf '%-36s %-4s %7s %10.1f %12d %16d %16s\n' "$name" "$mode" "$([ "$onbus" -gt 0 ] && echo yes || echo no)" \
    "$(echo "$rss / 1024" | bc -l)" "$start" "$idlecpu" \
    "$([ "$mode" = on ] && echo "$dcpu" || echo -)"
}
for mode in off on; do
  row "zenity --password (GTK 3)" Zenity "$mode" zenity --password
done
for mode in off on; do
  row "KeePassXC welcome screen (Qt 5)" KeePassXC "$mode" keepassxc
done
for mode in off on; do
  if [ "$mode" = on ]; then
    row "pinentry-qt (Qt 5, ALWAYS_ON)" pinentry-qt "$mode" env QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 pinentry-qt
  else
    row "pinentry-qt (Qt 5)" pinentry-qt "$mode" pinentry-qt
  fi
done
