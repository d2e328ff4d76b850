#!/usr/bin/env bash
# CaptureShield Xorg tests: trust that cannot be borrowed (rules identity, handover, daemonrole; the module side).
# An attacker (uid nobody) gets a trusted program's trust by loading code into it
# (LD_PRELOAD kept or scrubbed, LD_AUDIT, a fake library through LD_LIBRARY_PATH), by
# handing a connection over to its own process (fork, SCM_RIGHTS) before the connecting
# process execs a trusted program, by a bind mount at a Trust path in a mount namespace of
# its own, or by running the daemon's program with another command or as another user.
# Each attack on a censor and a deny server: 0 secret pixels, logged with pid/exe/reason;
# the same on a server with the rule off (DisableRules identity/handover/daemonrole): the
# 40,000 secret pixels. CS_MODDIR=DIR runs the same attacks against the module in DIR
# (the "before" figures: every check is reported, failures expected).
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/t-lib.sh"
ATK=$OUT/atk-trust
SECRET=40000
BEFORE=${CS_MODDIR:-}
[ -x "$ATK" ] || { echo "Error: $ATK not built (make probes)" >&2; exit 1; }

# The trusted programs: copies in a directory of root's that nobody else may write (t-lib's
# $SAFE under /run; /tmp is world-writable, so a trusted copy must not live there)
TDIR=$SAFE
BG_PIDS+=()
trap '[ -n "${TRUST_KEEPLOG:-}" ] && cp "$TMP"/*.log "$TRUST_KEEPLOG"/ 2>/dev/null; cleanup; rm -rf "$TDIR"' EXIT
cp "$ATK" "$TDIR/trusted"          # the Trust list's program (atk-trust read|idle)
cp "$ATK" "$TDIR/shieldctl"        # the Daemon program
chmod 755 "$TDIR/trusted" "$TDIR/shieldctl"
d=$TDIR; chain_ok=1
while :; do
  [ "$(stat -c %u "$d")" = 0 ] && [ $(( 0$(stat -c %a "$d") & 022 )) = 0 ] || chain_ok=0
  [ "$d" = / ] && break; d=$(dirname "$d")
done
[ $chain_ok = 1 ] && ok "setup: $TDIR and every directory above it are root's, not group/other writable" ||
  bad "setup: a directory above $TDIR is not root's or is writable by others (trust must be refused there)"

# The attacker's directory and code: owned by nobody
NOB=$TMP/nob
mkdir -p "$NOB/empty"
cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$NOB/inject.so" "$here/trust-inject.c" -lxcb
mkdir -p "$NOB/fakelib"
cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$NOB/fakelib/libxcb-composite.so.0" \
  -Wl,-soname,libxcb-composite.so.0 \
  -Wl,-F,"$(realpath /usr/lib/x86_64-linux-gnu/libxcb-composite.so.0)" "$here/trust-inject.c" -lxcb
cc -shared -fPIC -O2 -Wall -Wextra -Werror -DINJECT_NOOP -o "$NOB/noop.so" "$here/trust-inject.c" -lxcb
cp "$ATK" "$NOB/atk"
chown -R nobody:nogroup "$NOB"
# the server's socket is reachable by nobody (no -auth: any local user may connect)

# Servers: <M> rules on, <M>I identity off (path-only trust),
# <M>H handover off (no sole-holder check, no re-checks), <M>R daemonrole off; M = C
# censor, D deny
TRUST="Option \"Trust\" \"$TDIR/trusted:$TPROBE:$TDIR/notinstalled/compiz\""
DAEMON="Option \"Daemon\" \"$TDIR/shieldctl\""
if [ -n "$BEFORE" ]; then
  # the module before: no Daemon option; its daemon program was in the Trust list
  TRUST="Option \"Trust\" \"$TDIR/trusted:$TPROBE:$TDIR/notinstalled/compiz:$TDIR/shieldctl\""
fi
declare -A XPID
# (the controls also switch trustuser off: their attacks run the Trust program as nobody)
declare -A SERVERS=([C]="" [CI]=identity,trustuser [CH]=handover,trustuser
                    [CR]=daemonrole,trustuser
                    [D]="" [DI]=identity,trustuser [DH]=handover,trustuser
                    [DR]=daemonrole,trustuser)
for s in C CI CH CR D DI DH DR; do
  opts=("$TRUST" "$DAEMON")
  [ "${s:0:1}" = D ] && opts+=('Option "Mode" "deny"')
  [ "$s" = D ] && opts+=('Option "DaemonUsers" "root,daemon"')
  [ -n "${SERVERS[$s]}" ] && opts+=("Option \"DisableRules\" \"${SERVERS[$s]}\"")
  mod_conf "$TMP/$s.conf" "${opts[@]}"
  start_xorg "$s" "$TMP/$s.conf"
  XPID[$s]=${XORG_PIDS[-1]}
done
echo "# servers: $(for s in C CI CH CR D DI DH DR; do v=XDISPLAY_$s; printf '%s=%s ' $s "${!v}"; done)"

# victims: a 200x200 red secure window nothing covers on every server
for s in C CI CH CR D DI DH DR; do
  v=XDISPLAY_$s
  coproc VIC { DISPLAY=${!v} exec "$ATK" victim; }
  BG_PIDS+=("$VIC_PID")
  read -r -t 10 line <&"${VIC[0]}" || { echo "Error: victim did not start on $s" >&2; exit 1; }
  exec {VIC[0]}<&- {VIC[1]}>&-
done

PAD=$(head -c 100000 /dev/zero | tr '\0' x)
# as nobody, without a subshell (as_nobody is a function): $! is the attacker's pid
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
# red OUTPUT [key]: the number after key= (default red) or -1
red() { local v; v=$(fld "$1" "${2:-red}"); echo "${v:--1}"; }
# run_pid OUTFILE CMD...: runs CMD (its pid in RUN_PID, also after setpriv/env exec)
run_pid() { local o=$1; shift; "$@" >"$o" 2>&1 & RUN_PID=$!; wait "$RUN_PID" || true; }
# logged SERVER PID REASON: the server logged a refusal of trust for PID with REASON
logged() {
  local lg=LOG_$1
  grep -q "CAPTURESHIELD: client [0-9]* (pid $2, [^)]*) \(refused\|LOSES\) trust .*$3" "${!lg}"
}
# verdict NAME SERVER PID OUTPUT [KEY] REASON: on a rules-on server 0 secret pixels
# (deny: none read) and the refusal logged; on a control server all of them
verdict() {
  local name=$1 s=$2 pid=$3 out=$4 key=$5 reason=$6 r
  r=$(red "$out" "$key")
  case $s in
    C|D)
      if [ "$r" -le 0 ] 2>/dev/null; then
        if [ -n "$BEFORE" ] || logged "$s" "$pid" "$reason"; then
          ok "$s: $name: $r secret px, logged ($reason)  [$out]"
        else
          bad "$s: $name: $r secret px but no log line 'pid $pid ... $reason'  [$out]"
        fi
      else
        bad "$s: $name: $r secret px read (wanted 0)  [$(echo $out)]"
      fi ;;
    *)
      [ "$r" = $SECRET ] && ok "$s (control, ${SERVERS[$s]} off): $name: $r secret px  [$out]" ||
        bad "$s (control, ${SERVERS[$s]} off): $name: $r secret px (wanted $SECRET)  [$(echo $out)]" ;;
  esac
}

for M in C D; do
  v=XDISPLAY_$M; export DISPLAY=${!v}
  # honest clients: the trusted program (root and nobody), a daemon "watch" as root
  out=$("$TDIR/trusted" read); expect "$M: the trusted program (root) reads the secure window" "$out" red -eq $SECRET trust -eq 2
  # another user's copy of a Trust program (its own compositor, with that program's own
  # logging) is an ordinary client: rule trustuser; control: the same on ${M}R
  run_pid "$TMP/o" "${NOBODY[@]}" "$TDIR/trusted" read
  verdict "the Trust program run by nobody (another uid)" "$M" "$RUN_PID" "$(cat "$TMP/o")" red "trust uid"
  v=XDISPLAY_${M}R
  out=$(DISPLAY=${!v} as_nobody "$TDIR/trusted" read)
  expect "${M}R (control, trustuser off): the Trust program run by nobody is trusted" "$out" red -eq $SECRET trust -eq 2
  out=$("$TDIR/shieldctl" watch)
  if [ -z "$BEFORE" ]; then
    expect "$M: the daemon program as root, argv[1] watch: trusted" "$out" red -eq $SECRET trust -eq 2
  fi
  out=$("$PROBE" proto version); expect "$M: an untrusted program stays untrusted" "$out" trust -eq 0
  # a refusal is reported to the daemon: CaptureNotify kind 7, drawable = the reason (1:
  # injected code), before the refused client's first read
  if [ -z "$BEFORE" ]; then
    "$TPROBE" listen 1 >"$TMP/ev" &
    lp=$!; BG_PIDS+=("$lp")
    for i in $(seq 50); do grep -q ready "$TMP/ev" && break; sleep 0.1; done
    "${NOBODY[@]}" env LD_PRELOAD="$NOB/inject.so" "$TDIR/trusted" read >/dev/null 2>&1 || true
    for i in $(seq 50); do grep -q event "$TMP/ev" && break; sleep 0.1; done
    out=$(grep event "$TMP/ev" || echo none)
    expect "$M: a refused Trust program is reported to a trusted listener (kind 7, reason 1)" "$out" kind -eq 7 drawable = 0x1
    kill "$lp" 2>/dev/null || true; wait "$lp" 2>/dev/null || true
  fi

  for S in $M ${M}I; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    # code inside a trusted program
    run_pid "$TMP/o" "${NOBODY[@]}" env LD_PRELOAD="$NOB/inject.so" "$TDIR/trusted" read
    verdict "LD_PRELOAD into the trusted program" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "injected code: LD_PRELOAD"
    run_pid "$TMP/o" "${NOBODY[@]}" env LD_PRELOAD="$NOB/inject.so" INJECT_SCRUB=1 "$TDIR/trusted" read
    verdict "LD_PRELOAD, scrubbed from the environment before connecting" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "injected code"
    run_pid "$TMP/o" "${NOBODY[@]}" env LD_AUDIT="$NOB/inject.so" "$TDIR/trusted" read
    verdict "LD_AUDIT into the trusted program" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "injected code: LD_AUDIT"
    run_pid "$TMP/o" "${NOBODY[@]}" env LD_LIBRARY_PATH="$NOB/fakelib" "$TDIR/trusted" read
    verdict "a fake libxcb-composite through LD_LIBRARY_PATH" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "injected code: LD_LIBRARY_PATH"
    # the environment is read whole: an LD_LIBRARY_PATH naming nobody's directory after
    # 300 KB of other variables (ld.so searches it; the directory is empty here)
    run_pid "$TMP/o" "${NOBODY[@]}" env PAD1="$PAD" PAD2="$PAD" PAD3="$PAD" LD_LIBRARY_PATH="$NOB/empty" "$TDIR/trusted" read
    verdict "LD_LIBRARY_PATH of nobody's directory after 300 KB of environment" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "injected code: LD_LIBRARY_PATH"
    # another mount namespace: the attacker's program bind-mounted at a Trust path, and
    # copied to a Trust path that is not installed (tmpfs over its directory)
    run_pid "$TMP/o" "${NOBODY[@]}" unshare -Urm sh -c \
      "mount --bind '$NOB/atk' '$TDIR/trusted' && exec '$TDIR/trusted' read"
    verdict "mount namespace: own program bind-mounted at a Trust path" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "namespace"
    run_pid "$TMP/o" "${NOBODY[@]}" unshare -Urm sh -c \
      "mount -t tmpfs none '$TDIR' && mkdir '$TDIR/notinstalled' && cp '$NOB/atk' '$TDIR/notinstalled/compiz' && exec '$TDIR/notinstalled/compiz' read"
    verdict "mount namespace: own program at a Trust path not installed" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "namespace"
  done

  for S in $M ${M}I; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    # a debugger (same uid, ptrace_scope 0 or no yama) makes the trusted program dlopen the
    # attacker's library: its constructor connects and reads while the debugger is attached
    if ! command -v gdb >/dev/null; then echo "# no gdb: the debugger cases are not run"; break; fi
    "${NOBODY[@]}" "$TDIR/trusted" idle >"$TMP/g" 2>&1 &
    gp=$!; BG_PIDS+=("$gp")
    for i in $(seq 50); do [ -e "/proc/$gp/fd/3" ] && break; sleep 0.1; done
    "${NOBODY[@]}" gdb -q -p "$gp" -batch -ex "call (void*)dlopen(\"$NOB/inject.so\", 2)" >"$TMP/gdb.out" 2>&1 || true
    wait "$gp" 2>/dev/null || true
    verdict "gdb: dlopen of the attacker's library in the trusted program" "$S" "$gp" "$(cat "$TMP/g")" red "tracer"
    # a trusted connection that reads, then gets foreign code mapped (gdb dlopen of a library
    # that only sits there, the debugger gone): the next read re-checks and loses trust
    # (as root, the session's user here: another uid's copy is never trusted, rule trustuser)
    coproc TS { exec "$TPROBE" session; }
    tp=$TS_PID; BG_PIDS+=("$tp")
    echo cap >&"${TS[1]}"; read -r -t 10 l1 <&"${TS[0]}" || l1=none
    gdb -q -p "$tp" -batch -ex "call (void*)dlopen(\"$NOB/noop.so\", 2)" >"$TMP/gdb.out" 2>&1 || true
    sleep 1.1   # older than the re-check interval (1000 ms)
    echo cap >&"${TS[1]}"; read -r -t 10 l2 <&"${TS[0]}" || l2=none
    echo quit >&"${TS[1]}"; wait "$tp" 2>/dev/null || true
    if [ "$(red "$l1" red_max)" = $SECRET ]; then
      verdict "trusted connection read, then gdb maps foreign code in, read again (re-check)" "$S" "$tp" "$l2" red_max "(re-check): injected code"
    else
      bad "$S: the trusted session did not read before the injection  [$l1]"
    fi
  done

  # grants: the trusted daemon's stand-in grants a connection; the grantee passes the
  # same kernel checks (here: an LD_LIBRARY_PATH naming nobody's directory)
  for S in $M ${M}I; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    coproc GS { exec "${NOBODY[@]}" env LD_LIBRARY_PATH="$NOB/empty" "$PROBE" session; }
    gs=$GS_PID; BG_PIDS+=("$gs")
    echo base >&"${GS[1]}"; read -r -t 10 lb <&"${GS[0]}" || lb=none
    gout=$("$TPROBE" proto grant "$(fld "$lb" base)")
    echo cap >&"${GS[1]}"; read -r -t 10 lc <&"${GS[0]}" || lc=none
    echo quit >&"${GS[1]}"; wait "$gs" 2>/dev/null || true
    echo "# $S: grantee $lb"
    case $S in
      C|D) expect "$S: Grant to a connection with an unsafe LD_LIBRARY_PATH: BadAccess" "$gout" err -eq 10
           verdict "the refused grantee reads" "$S" "$gs" "$lc" red_max "(grant): injected code: LD_LIBRARY_PATH" ;;
      *)   expect "$S (control): Grant to the same: allowed" "$gout" err -eq 0
           verdict "the grantee reads" "$S" "$gs" "$lc" red_max "" ;;
    esac
  done
  v=XDISPLAY_$M; export DISPLAY=${!v}
  coproc HS { exec "${NOBODY[@]}" "$PROBE" session; }
  hs=$HS_PID; BG_PIDS+=("$hs")
  echo base >&"${HS[1]}"; read -r -t 10 lb <&"${HS[0]}" || lb=none
  gout=$("$TPROBE" proto grant "$(fld "$lb" base)")
  echo cap >&"${HS[1]}"; read -r -t 10 lc <&"${HS[0]}" || lc=none
  echo quit >&"${HS[1]}"; wait "$hs" 2>/dev/null || true
  echo "# $M: honest grantee $lb"
  expect "$M: Grant to an honest connection (run by nobody): allowed" "$gout" err -eq 0
  expect "$M: the honest grantee reads the secure window" "$lc" red_max -eq $SECRET

  for S in $M ${M}H; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    # connection handover: the connecting process execs the trusted program, the
    # attacker's other process reads through the connection; then the trusted program is
    # killed and the attacker reads again
    for how in "fork raw" "fork setup" "scm raw"; do
      rm -f "$TMP/h"
      "${NOBODY[@]}" "$ATK" handover $how "$TDIR/trusted" idle >"$TMP/h" 2>&1 &
      hp=$!; BG_PIDS+=("$hp")
      for i in $(seq 100); do grep -q "^red=" "$TMP/h" && break; sleep 0.1; done
      out=$(grep "^red=" "$TMP/h" || echo "red=none")
      if [ "$how" = "fork setup" ] && [ $S = ${M}H ]; then
        # X setup before the exec: the setup reply is flushed before the server identifies
        # the connection, so whether the exec came first is a race (control: not asserted)
        echo "# $S (control, handover off): handover ($how): $out (a race: 0 or $SECRET)"
      elif [ "$how" = "fork setup" ]; then
        # identified at setup as the attacker's program (untrusted, nothing to log) or, when
        # the exec won the race, refused as a handover
        expect "$S: handover ($how): 0 secret px" "$out" red -le 0
      else
        verdict "handover ($how) to the attacker's process" "$S" "$hp" "$out" red "handover"
      fi
      kill "$hp" 2>/dev/null || true; wait "$hp" 2>/dev/null || true
      for i in $(seq 100); do grep -q "^after_kill" "$TMP/h" && break; sleep 0.1; done
      out=$(grep "^after_kill" "$TMP/h" || echo "red=none")
      if [ "$how" = "fork setup" ] && [ $S = ${M}H ]; then
        echo "# $S (control, handover off): handover ($how), trusted program killed: $out"
      elif [ "$how" = "fork setup" ]; then
        expect "$S: handover ($how), trusted program killed: 0 secret px" "$out" red -le 0
      else
        verdict "handover ($how), trusted program killed, read again" "$S" "$hp" "$out" red "handover"
      fi
    done
  done

  for S in $M ${M}H; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    # a socket in flight: the connecting process writes the X setup request, sends the
    # socket over SCM_RIGHTS (not yet received), keeps its copy and execs the trusted
    # program; the server (stopped meanwhile) identifies the connection only then: the
    # trusted program is its only holder. The receiver then takes it and reads at once
    # (within the re-check interval): its first read re-checks.
    rm -f "$TMP/go" "$TMP/h"
    kill -STOP "${XPID[$S]}"
    # (as root, the session's user: another uid's copy is never trusted, rule trustuser)
    ATK_GO=$TMP/go "$ATK" handover inflight "$TDIR/trusted" idle >"$TMP/h" 2>&1 &
    hp=$!; BG_PIDS+=("$hp")
    for i in $(seq 100); do grep -q exec_done "$TMP/h" && break; sleep 0.1; done
    kill -CONT "${XPID[$S]}"
    touch "$TMP/go"
    for i in $(seq 100); do grep -q "^red=" "$TMP/h" && break; sleep 0.1; done
    out=$(grep "^red=" "$TMP/h" || echo "red=none $(tr '\n' ' ' <"$TMP/h")")
    verdict "handover of a socket in flight, read at once through it" "$S" "$hp" "$out" red "handover"
    kill "$hp" 2>/dev/null || true; wait "$hp" 2>/dev/null || true
  done

  for S in $M ${M}R; do
    v=XDISPLAY_$S; export DISPLAY=${!v}
    # the daemon's program: another command (no daemon running), or "watch" as another user
    run_pid "$TMP/o" "$TDIR/shieldctl" untag
    verdict "daemon program as root with argv[1] untag" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "daemon argv"
    run_pid "$TMP/o" "${NOBODY[@]}" "$TDIR/shieldctl" watch
    verdict "daemon program 'watch' run by nobody (not in DaemonUsers)" "$S" "$RUN_PID" "$(cat "$TMP/o")" red "daemon uid"
    # ... and its pause (SetProtection 0): refused, an untrusted read stays black
    "${NOBODY[@]}" "$TDIR/shieldctl" watch pause >"$TMP/o" 2>&1 || true
    p=$(fld "$(cat "$TMP/o")" pause_err)
    out=$("$ATK" read)
    case $S in
      C|D) [ "$p" = 10 ] && [ "$(red "$out")" -le 0 ] &&
             ok "$S: 'shieldctl watch' by nobody, then pause: BadAccess, untrusted reads $(red "$out")  [$(cat "$TMP/o")]" ||
             bad "$S: 'shieldctl watch' by nobody, pause: err=$p, untrusted read $(red "$out")" ;;
      *)   [ "$p" = 0 ] && [ "$(red "$out")" = $SECRET ] &&
             ok "$S (control): 'shieldctl watch' by nobody, then pause: allowed, untrusted reads $SECRET" ||
             bad "$S (control): pause err=$p, untrusted read $(red "$out")"
           "$TPROBE" proto protect 1 >/dev/null ;;
    esac
  done
done

summary
