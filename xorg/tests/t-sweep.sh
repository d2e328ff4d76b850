#!/usr/bin/env bash
# CaptureShield Xorg tests: every request of the protocol inventory from either byte order.
# An untrusted client (uid nobody, atk-swap's `every`, which writes its requests itself)
# sends, for each of the 605 requests of xorg/inventory/classes.tsv that the server offers,
# CS_SWEEP_K (8) requests of random content and length (and the shortest, 2 units, and 24
# units of 0xff), each followed by a round trip, byte-swapped and in the host's order, on a
# censor-mode and a deny-mode server with a secure window mapped: the server must answer
# every one (alive, not hung). The stock server first (no module, same seed): a request
# that kills it there is the X server's own bug, reported here and left out of the runs
# with the module (it is listed with its byte order). Positive control: a module built in
# CS_MODDIR that crashes on swapped clients (dd66fdf's) dies in the swapped sweep.
# CS_SWEEP_SEED replays a run. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-swap
[ -x "$ATK" ] || { echo "Error: $ATK not built" >&2; exit 1; }
export CS_SWEEP_SEED=${CS_SWEEP_SEED:-20261207} CS_SWEEP_K=${CS_SWEEP_K:-8}
INV="$(cd "$(dirname "${BASH_SOURCE[0]}")/../inventory" && pwd)/classes.tsv"
awk -F'\t' '$2=="request" {print $1, $4, $3}' "$INV" >"$TMP/all"
echo "# seed $CS_SWEEP_SEED, $CS_SWEEP_K per request, $(wc -l <"$TMP/all") requests in the inventory"

mod_conf "$TMP/A.conf"
mod_conf "$TMP/D.conf" 'Option "Mode" "deny"'
write_conf "$TMP/B.conf" 0

# sweep ORDER LIST: the sweep's last line on $DISPLAY
sweep() {
  local flag=; [ "$1" = host ] && flag=--host
  as_nobody timeout 600 "$ATK" $flag every 0 <"$2" 2>&1 | tail -1 || true
}
fld() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }

# The stock server, each order: a request that kills it is left out (up to 10), the server
# started again; what remains must run through.
for order in swapped host; do
  cp "$TMP/all" "$TMP/list-$order"
  stock=""
  for try in $(seq 11); do
    start_xorg "B$order$try" "$TMP/B.conf"
    eval "export DISPLAY=\$XDISPLAY_B$order$try"
    out=$(sweep "$order" "$TMP/list-$order")
    kill "${XORG_PIDS[-1]}" 2>/dev/null || true
    at=$(fld "$out" at)
    [ -n "$at" ] || break
    stock="$stock $at"
    grep -v "^${at%%:*} [0-9]* ${at#*:}\$" "$TMP/list-$order" >"$TMP/list-$order.new" || true
    mv "$TMP/list-$order.new" "$TMP/list-$order"
  done
  echo "# stock Xorg without the module, $order: requests that kill it:${stock:- none}"
  expect "without the module, $order: the sweep runs through once the stock crashes are left out" \
    "$out" alive = 1
done

start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
for srv in A D; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  start_victim
  for order in swapped host; do
    out=$(sweep "$order" "$TMP/list-$order")
    expect "$srv $order: every request of the inventory, $CS_SWEEP_K times random, the server answers each" \
      "$out" alive = 1 requests -gt 4000
  done
  stop_victim
done
summary
