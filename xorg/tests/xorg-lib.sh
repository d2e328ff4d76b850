# CaptureShield Xorg tests: starts and stops headless Xorg servers (dummy driver) in a temp dir.
# Sourced by t-lib.sh (every suite) and bench.sh. Needs: OUT (build dir), TMP (temp dir).
XORG_BIN=${XORG_BIN:-/usr/lib/xorg/Xorg}
XORG_PIDS=()

# write_conf FILE WITH_MODULE(0|1|load) [extra Option lines for the captureshield SubSection]
# (1: SubSection "captureshield" with the options; load: a plain Load "captureshield")
write_conf() {
  local file=$1 with=$2; shift 2
  {
    echo 'Section "ServerFlags"'
    echo '  Option "AutoAddDevices" "false"'
    echo '  Option "AutoEnableDevices" "false"'
    echo '  Option "AutoAddGPU" "false"'
    echo '  Option "DontVTSwitch" "true"'
    echo '  Option "DontZap" "true"'
    echo 'EndSection'
    echo 'Section "Files"'
    echo "  ModulePath \"$OUT,/usr/lib/xorg/modules\""
    echo 'EndSection'
    echo 'Section "Module"'
    if [ "$with" = load ]; then
      echo '  Load "captureshield"'
    elif [ "$with" = 1 ]; then
      echo '  SubSection "captureshield"'
      local o
      for o in "$@"; do echo "    $o"; done
      echo '  EndSubSection'
    fi
    echo 'EndSection'
    echo 'Section "Device"'
    echo '  Identifier "dev0"'
    echo '  Driver "dummy"'
    echo '  VideoRam 32768'
    echo 'EndSection'
    echo 'Section "Monitor"'
    echo '  Identifier "mon0"'
    echo '  HorizSync 5.0 - 1000.0'
    echo '  VertRefresh 5.0 - 200.0'
    echo '  Modeline "800x600" 38.25 800 832 912 1024 600 603 607 624 -hsync +vsync'
    echo 'EndSection'
    echo 'Section "Screen"'
    echo '  Identifier "scr0"'
    echo '  Device "dev0"'
    echo '  Monitor "mon0"'
    echo '  DefaultDepth 24'
    echo '  SubSection "Display"'
    echo '    Depth 24'
    echo '    Modes "800x600"'
    echo '    Virtual 800 600'
    echo '  EndSubSection'
    echo 'EndSection'
  } >"$file"
}

# start_xorg NAME CONF [Xorg arguments]: starts Xorg, sets XDISPLAY_<NAME>=:N and LOG_<NAME>
# (with -noreset, unless XORG_NORESET=0: then the server resets when its last client leaves)
start_xorg() {
  local name=$1 conf=$2 fifo="$TMP/$1.fd" disp="" noreset=-noreset
  shift 2
  [ "${XORG_NORESET:-1}" = 0 ] && noreset=
  mkdir -p "$TMP/$name.d"
  mkfifo "$fifo"
  "$XORG_BIN" -config "$conf" -configdir "$TMP/$name.d" -logfile "$TMP/$name.log" \
    $noreset -nolisten tcp -novtswitch -sharevts "$@" -displayfd 9 9>"$fifo" \
    >"$TMP/$name.out" 2>&1 &
  XORG_PIDS+=($!)
  read -r -t 20 disp <"$fifo" || true
  rm -f "$fifo"
  if [ -z "$disp" ]; then
    echo "Error: Xorg ($name) did not start; log:" >&2
    tail -20 "$TMP/$name.log" >&2 || true
    return 1
  fi
  printf -v "XDISPLAY_$name" ':%s' "$disp"
  printf -v "LOG_$name" '%s' "$TMP/$name.log"
}

# Stock Xorg 21.1.7 that has reset at least once (no -noreset) aborts at exit in
# config_fini (a double free, with or without the module) and then hangs in its abort
# handler: what is still there after 5 s is killed.
stop_all_xorg() {
  local p="" i
  [ "${#XORG_PIDS[@]}" -gt 0 ] || return 0
  for p in "${XORG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for i in $(seq 50); do
    for p in "${XORG_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && break; done
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  for p in "${XORG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${XORG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  XORG_PIDS=()
}
