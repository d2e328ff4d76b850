#!/usr/bin/env bash
# CaptureShield Xorg tests: secure views, a part of a window secret (rule views, views.c).
# A 400x300 green top-level with a 200x100 red area: (1) the area a child window tagged
# _CAPTURE_SHIELD_SECURE, (2) drawn into the top-level and declared in its
# _CAPTURE_SHIELD_VIEWS (also over an untagged child window, which is secret there too),
# moved as the app updates the property, then malformed (the whole
# window secure, fail safe). An untrusted reader (uid nobody) takes GetImage of the root:
# censor must get 0 red and all 100,000 green pixels, deny BadAccess; only the owner writes
# _CAPTURE_SHIELD_VIEWS and only trusted programs _CAPTURE_SHIELD_POLICY_VIEWS. Positive
# controls: the child untagged, the property absent, and a server with the rule off
# (DisableRules views), where the reader gets all 20,000 red pixels and the writes pass.
# The root is black: 360,000 black pixels around the window, 380,000 with the red area
# censored. CS_MODDIR=DIR runs the suite with the module built in DIR.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
ATK=$OUT/atk-views
[ -x "$ATK" ] || { echo "Error: $ATK not built" >&2; exit 1; }
export CS_VERIFY_REGION=1       # each incremental area checked against a full one
conf() { mod_conf "$@"; }
conf "$TMP/A.conf"
conf "$TMP/D.conf" 'Option "Mode" "deny"'
conf "$TMP/C.conf" 'Option "DisableRules" "views"'
start_xorg A "$TMP/A.conf"
start_xorg D "$TMP/D.conf"
start_xorg C "$TMP/C.conf"
echo "# servers: censor $XDISPLAY_A, deny $XDISPLAY_D, rule views off $XDISPLAY_C (module: ${CS_MODDIR:-$OUT})"

# app MODE: starts the app on $DISPLAY, sets T and C
app() {
  local line
  coproc APP { exec "$ATK" app "$1"; }
  BG_PIDS+=("$APP_PID")
  read -r -t 10 line <&"${APP[0]}" || { echo "Error: app did not start" >&2; exit 1; }
  eval "$line"
}
say() { local r; echo "$1" >&"${APP[1]}"; read -r -t 10 r <&"${APP[0]}" || r=none; echo "$r"; }
app_stop() { kill "$APP_PID" 2>/dev/null || true; wait "$APP_PID" 2>/dev/null || true; }
shot() { as_nobody "$ATK" shot; }

for srv in A D C; do
  eval "export DISPLAY=\$XDISPLAY_$srv"
  # (1) a tagged child window
  if [ $srv != C ]; then
    app child
    s=$(shot)
    if [ $srv = A ]; then
      expect "$srv: tagged child censored exactly (0 red, the 100,000 green around it intact)" \
        "$s" err = 0 red = 0 green = 100000 black = 380000
    else
      expect "$srv: tagged child: the read of the screen refused" "$s" err = 10
    fi
    app_stop
    # a view over an untagged child window: what the child shows there is secret too
    app childview
    s=$(shot)
    if [ $srv = A ]; then
      expect "$srv: view over an untagged child censored exactly" "$s" err = 0 red = 0 green = 100000 black = 380000
    else
      expect "$srv: view over a child: refused" "$s" err = 10
    fi
    app_stop
  else
    export DISPLAY=$XDISPLAY_A
    app childplain
    expect "control: child untagged: its 20,000 red pixels captured" "$(shot)" \
      err = 0 red = 20000 green = 100000
    app_stop
    app plain
    expect "control: no _CAPTURE_SHIELD_VIEWS: the 20,000 red pixels captured" "$(shot)" \
      err = 0 red = 20000 green = 100000
    app_stop
    export DISPLAY=$XDISPLAY_C
    app childview
    expect "C (control, views off): the view over a child captured" "$(shot)" err = 0 red = 20000 green = 100000
    app_stop
  fi
  # (2) a view declared in _CAPTURE_SHIELD_VIEWS, moved, then malformed
  app views
  s=$(shot)
  case $srv in
    A) expect "$srv: view censored exactly" "$s" err = 0 red = 0 green = 100000 black = 380000 ;;
    D) expect "$srv: view: the read of the screen refused" "$s" err = 10 ;;
    C) expect "$srv (control, views off): the view's 20,000 red pixels captured" "$s" \
         err = 0 red = 20000 green = 100000 ;;
  esac
  m=$(say "move 20 20")
  s=$(shot)
  case $srv in
    A) expect "$srv: the view moved with the property: still 0 red" "$m $s" \
         err = 0 red = 0 green = 100000 black = 380000 ;;
    D) expect "$srv: moved view: refused" "$m $s" err = 10 ;;
    C) expect "$srv (control): moved view captured" "$m $s" err = 0 red = 20000 green = 100000 ;;
  esac
  p=$(say policy)
  w=$(as_nobody "$ATK" write "$T" _CAPTURE_SHIELD_VIEWS | sed 's/err=/nobody_err=/')
  if [ $srv = C ]; then
    expect "$srv (control): the app writes the daemon's property, another client the app's" \
      "$p $w" policy_err = 0 nobody_err = 0
  else
    expect "$srv: the app may not write _CAPTURE_SHIELD_POLICY_VIEWS, another client not _CAPTURE_SHIELD_VIEWS" \
      "$p $w" policy_err = 10 nobody_err = 10
  fi
  if [ $srv = A ]; then
    b=$(say bad)
    expect "$srv: malformed _CAPTURE_SHIELD_VIEWS: the whole window secure" "$b $(shot)" \
      err = 0 red = 0 green = 0 black = 480000
  fi
  app_stop
done
summary
