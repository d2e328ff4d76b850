# CaptureShield Xorg tests: what each adversary suite (tests/t-*.sh) shares. Sourced after
# `set -euo pipefail`; needs OUT. Gives TMP, PROBE, TPROBE, COUNT, ok/bad/expect/fld,
# start_victim/stop_victim, write_conf/start_xorg (xorg-lib.sh) and summary (the closing
# "N passed, N failed" line; exit status 1 on a failure).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../../.build/xorg}
TMP=$(mktemp -d /tmp/csxorg.XXXXXX)
chmod 755 "$TMP"                # an attacker run as another uid reads its files
PROBE=$OUT/csprobe
# Trusted programs must live where only root can write, up to / (the module checks the
# file and every directory above it): copies in a directory under /run, wherever the
# build is (a clone under /tmp would not do). trusted_copy SRC NAME prints the copy's path.
SAFE=$(mktemp -d /run/csxorg-bin.XXXXXX)
chmod 755 "$SAFE"
trusted_copy() { cp "$1" "$SAFE/$2" && chmod 755 "$SAFE/$2" && echo "$SAFE/$2"; }
TPROBE=$(trusted_copy "$OUT/csprobe-trusted" csprobe-trusted)
COUNT=$OUT/cscount
. "$here/xorg-lib.sh"
BG_PIDS=()
cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_all_xorg
  [ -n "${CS_KEEP_TMP:-}" ] || rm -rf "$TMP" "$SAFE"   # CS_KEEP_TMP=1: keep the logs
}
trap cleanup EXIT
start=$(date +%s)
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
fld() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
# expect NAME OUTPUT key OP value [key OP value ...]
expect() {
  local name=$1 out=$2 k op v got; shift 2
  while [ $# -gt 0 ]; do
    k=$1 op=$2 v=$3; shift 3
    got=$(fld "$out" "$k")
    if [ -z "$got" ] || ! [ "$got" "$op" "$v" ]; then
      bad "$name: $k=$got, wanted $op $v  [$out]"
      return
    fi
  done
  ok "$name  [$out]"
}
# start_victim [ARGS]: the 200x200 red secure window (csprobe victim); sets V_S V_A V_PIX V_BASE
start_victim() {
  local line
  coproc VICTIM { exec "$PROBE" victim "$@"; }
  BG_PIDS+=("$VICTIM_PID")
  VPID=$VICTIM_PID
  read -r -t 10 line <&"${VICTIM[0]}" || { echo "Error: victim did not start" >&2; exit 1; }
  eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/V_/')"
}
stop_victim() { kill "$VPID" 2>/dev/null || true; wait "$VPID" 2>/dev/null || true; }
# mod_conf FILE OPTION...: a server config loading the module from CS_MODDIR (another
# build of it, e.g. an older one to see a suite fail) or OUT, with the captureshield options
mod_conf() {
  local f=$1 save=$OUT; shift
  OUT=${CS_MODDIR:-$OUT}
  write_conf "$f" 1 "$@"
  OUT=$save
}
# bg NAME CMD...: CMD in the background, its output in $TMP/NAME; wait_ready NAME...: until
# each printed "ready" (10 s at most); wait_done NAME...: until each exited; last NAME: its
# last line
bg() { local n=$1; shift; "$@" >"$TMP/$n" 2>&1 & echo $! >"$TMP/$n.pid"; BG_PIDS+=($!); }
wait_ready() { local n i; for n in "$@"; do for i in $(seq 100); do grep -q ready "$TMP/$n" && break; sleep 0.1; done; done; }
wait_done() { local n; for n in "$@"; do wait "$(cat "$TMP/$n.pid")" 2>/dev/null || true; done; }
last() { tail -1 "$TMP/$1" | tr -d '\n'; }
# as_nobody CMD...: runs CMD as uid nobody (another user of the display). With CS_SWAP=1,
# the suites' own attack programs ($OUT/atk-*, $OUT/csprobe) run as clients of the other
# byte order: their s390x builds ($OUT/be/, static) under qemu-user (make test-swapped)
as_nobody() {
  if [ "${CS_SWAP:-0}" = 1 ]; then
    # the first argument that is one of our attack programs (after `timeout N`, ...)
    local a args=() done=0 be
    for a in "$@"; do
      if [ $done = 0 ]; then
        case $a in
          "$OUT"/atk-swap) done=1 ;;   # it writes either byte order itself
          "$OUT"/atk-*|"$OUT"/csprobe)
            be="$OUT/be/$(basename "$a")"
            [ -x "$be" ] || { echo "Error: $be not built (make -C xorg probes)" >&2; exit 1; }
            args+=(qemu-s390x "$be")
            done=1
            continue
            ;;
        esac
      fi
      args+=("$a")
    done
    set -- "${args[@]}"
  fi
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}
summary() {
  [ "${CS_SWAP:-0}" = 1 ] && echo "# attack programs run as uid nobody were byte-swapped clients (CS_SWAP=1)"
  echo "# $(basename "$0") took $(( $(date +%s) - start )) s"
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
