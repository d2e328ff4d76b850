#!/usr/bin/env bash
# Installs or uninstalls CaptureShield. The list of installed files is `manifest` below,
# the one place both directions read, so `uninstall` removes exactly what `install` put
# there. `make install` / `make uninstall` call this script.
#
# Usage: scripts/install.sh install SHIELDCTL   (SHIELDCTL: the built release binary)
#        scripts/install.sh install-xorg MODULE (MODULE: .build/xorg/libcaptureshield.so)
#        scripts/install.sh uninstall           (removes both lists' files, when present)
#        scripts/install.sh list                (the files, one per line, with DESTDIR)
#        scripts/install.sh list-xorg           (the Xorg module's files, with DESTDIR)
# Environment:
#   PREFIX      /usr/local   where bin/, lib/systemd/user/ and share/ go
#   SYSCONFDIR  /etc         where xdg/autostart/ goes (/etc also for PREFIX=/usr/local,
#                            the directory desktops read)
#   DESTDIR     (empty)      staging root prepended to every path (packaging)
#   XORG_MODULEDIR           the X server's module directory (default: pkg-config
#                            --variable=moduledir xorg-server, else /usr/lib/xorg/modules);
#                            the module goes to its extensions/
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dist=$root/dist
prefix=${PREFIX:-/usr/local}
sysconfdir=${SYSCONFDIR:-/etc}
destdir=${DESTDIR:-}

die() { echo "install.sh: error: $*" >&2; exit 1; }

# The paths end up in the unit's ExecStart= and the desktop entry's Exec=, which would
# need quoting rules of their own for anything unusual: keep them plain.
for v in prefix sysconfdir; do
  [[ ${!v} =~ ^/[A-Za-z0-9._+@/-]*$ ]] ||
    die "${v^^} must be an absolute path of letters, digits and ._+@/- (got '${!v}')"
done
prefix=${prefix%/}
sysconfdir=${sysconfdir%/}
bindir=$prefix/bin
xorg_moduledir=${XORG_MODULEDIR:-$(pkg-config --variable=moduledir xorg-server 2>/dev/null || true)}
xorg_moduledir=${xorg_moduledir:-/usr/lib/xorg/modules}
[[ $xorg_moduledir =~ ^/[A-Za-z0-9._+@/-]*$ ]] ||
  die "XORG_MODULEDIR must be an absolute path of letters, digits and ._+@/- (got '$xorg_moduledir')"
xorg_moduledir=${xorg_moduledir%/}

# The installed files: "PATH MODE SOURCE", PATH without DESTDIR, SOURCE a file of the
# staging directory that `stage` fills.
manifest() {
  cat <<EOF
$bindir/shieldctl 0755 shieldctl
$prefix/lib/systemd/user/captureshield.service 0644 captureshield.service
$sysconfdir/xdg/autostart/captureshield.desktop 0644 captureshield.desktop
$prefix/share/doc/captureshield/policy.example.json5 0644 policy.example.json5
$prefix/share/man/man1/shieldctl.1 0644 shieldctl.1
$prefix/share/bash-completion/completions/shieldctl 0644 shieldctl.bash
$prefix/share/zsh/site-functions/_shieldctl 0644 _shieldctl
$prefix/share/fish/vendor_completions.d/shieldctl.fish 0644 shieldctl.fish
EOF
}

# The Xorg module's files (`make install-xorg-module`), same format; `uninstall` removes
# them too.
xorg_manifest() {
  cat <<EOF
$xorg_moduledir/extensions/libcaptureshield.so 0644 libcaptureshield.so
$sysconfdir/X11/xorg.conf.d/50-captureshield.conf 0644 50-captureshield.conf
EOF
}

# Directories that are CaptureShield's own, removed by uninstall when empty.
own_dirs() {
  echo "$prefix/share/doc/captureshield"
}

# Fills directory $1 with every file to install, generated for these paths, and checks
# them, so that nothing is installed unless everything is ready.
stage() {
  local stage=$1 bin=$2
  cp "$bin" "$stage/shieldctl"
  sed "s|@BINDIR@|$bindir|g" "$dist/captureshield.service.in" >"$stage/captureshield.service"
  sed "s|@BINDIR@|$bindir|g" "$dist/captureshield.desktop.in" >"$stage/captureshield.desktop"
  cp "$dist/policy.example.json5" "$dist/completions/shieldctl.bash" "$dist/completions/_shieldctl" \
    "$dist/completions/shieldctl.fish" "$stage/"
  chmod 0644 "$stage"/*
  chmod 0755 "$stage/shieldctl"
  PREFIX=$prefix SYSCONFDIR=$sysconfdir "$root/scripts/gen-man.sh" "$stage/shieldctl" "$stage/shieldctl.1"
  if grep -q @BINDIR@ "$stage/captureshield.service" "$stage/captureshield.desktop"; then
    die "a template placeholder was left in the unit or the desktop entry"
  fi
  "$stage/shieldctl" policy check "$stage/policy.example.json5" >/dev/null ||
    die "the example policy $dist/policy.example.json5 does not pass 'shieldctl policy check'"
}

# The Xorg module and its xorg.conf.d snippet (loads the module, names the installed
# shieldctl as the daemon; no compositor list: the daemon grants the compositor) into
# directory $1.
stage_xorg() {
  local stage=$1 module=$2
  cp "$module" "$stage/libcaptureshield.so"
  cat >"$stage/50-captureshield.conf" <<EOF
# CaptureShield Xorg module (installed by 'make install-xorg-module' or the
# captureshield-xorg-module package). The SubSection itself loads the module with its
# options: do not also add Load "captureshield" (the first load, without options, wins).
# Takes effect at the next start of the X server; its log then says
#   (II) CAPTURESHIELD: active, mode censor, N trusted program(s)
Section "Module"
    SubSection "captureshield"
        # "censor" (secure windows read as black) or "deny" (BadAccess)
        Option "Mode" "censor"
        # Daemon: the daemon's program. The module trusts it only as the daemon
        # ("shieldctl watch" run by a user of DaemonUsers, default root and the active
        # user of seat0) and only after kernel identity checks (no LD_PRELOAD, no tracer,
        # a root-owned file, the connection held by that process alone); every other
        # shieldctl command is an ordinary untrusted client. The daemon grants the
        # compositor per connection after its own checks (its user, who started it):
        # no compositor is listed here.
        Option "Daemon" "$bindir/shieldctl"
        #Option "DaemonUsers" "0,seat"
        # Trust: colon-separated absolute paths of programs trusted outright, with the
        # same kernel checks (the admin's choice; none by default), e.g. a compositor the
        # daemon does not grant. Only ONE Trust option counts.
        #Option "Trust" "/usr/bin/picom"
    EndSubSection
EndSection
EOF
  chmod 0644 "$stage/libcaptureshield.so" "$stage/50-captureshield.conf"
}

# Installs the files of manifest function $1 from staging directory $2.
install_files() {
  local list=$1 stagedir=$2 path mode source dest
  while read -r path mode source; do
    dest=$destdir$path
    install -d -m 0755 "$(dirname "$dest")"
    # A new file renamed over the old one: a running shieldctl keeps its binary.
    install -m "$mode" "$stagedir/$source" "$dest.new.$$"
    mv -f "$dest.new.$$" "$dest"
    echo "installed $dest"
  done < <("$list")
}

do_install_xorg() {
  local module=$1
  [ -f "$module" ] || die "'$module' is not a file (build it first: make xorg-module)"
  stagedir=$(mktemp -d)
  trap 'rm -rf "$stagedir"' EXIT
  stage_xorg "$stagedir" "$module"
  install_files xorg_manifest "$stagedir"
  if [ -z "$destdir" ]; then
    echo
    echo "The module loads at the next start of the X server (log out and back in, or"
    echo "restart the display manager); its log then says 'CAPTURESHIELD: active'."
  fi
}

do_install() {
  local bin=$1
  [ -f "$bin" ] && [ -x "$bin" ] || die "'$bin' is not an executable (build it first: swift build -c release)"
  stagedir=$(mktemp -d)
  trap 'rm -rf "$stagedir"' EXIT
  stage "$stagedir" "$bin"
  install_files manifest "$stagedir"
  if [ -z "$destdir" ]; then
    cat <<EOF

The autostart entry starts 'shieldctl watch' at every desktop login. To have systemd
run it instead (and restart it if it fails), enable the user unit:
  systemctl --user enable --now captureshield.service     # for you
  systemctl --global enable captureshield.service          # for every user
and hide the autostart entry for those users (a ~/.config/autostart/captureshield.desktop
with the two lines '[Desktop Entry]' and 'Hidden=true'); with both, the second daemon
to start exits with status 75 (one daemon per display) and is not restarted.
Policy: see $prefix/share/doc/captureshield/policy.example.json5 and 'man shieldctl'.
EOF
  fi
}

do_uninstall() {
  local path mode source dir
  while read -r path mode source; do
    if [ -e "$destdir$path" ] || [ -L "$destdir$path" ]; then
      rm -f "$destdir$path"
      echo "removed $destdir$path"
    fi
  done < <(manifest; xorg_manifest)
  while read -r dir; do
    [ -d "$destdir$dir" ] && rmdir --ignore-fail-on-non-empty "$destdir$dir"
  done < <(own_dirs)
  return 0
}

case "${1:-}" in
  install)
    [ $# -eq 2 ] || die "usage: scripts/install.sh install SHIELDCTL"
    do_install "$2"
    ;;
  install-xorg)
    [ $# -eq 2 ] || die "usage: scripts/install.sh install-xorg MODULE"
    do_install_xorg "$2"
    ;;
  uninstall)
    [ $# -eq 1 ] || die "usage: scripts/install.sh uninstall"
    do_uninstall
    ;;
  list)
    [ $# -eq 1 ] || die "usage: scripts/install.sh list"
    manifest | while read -r path _; do echo "$destdir$path"; done
    ;;
  list-xorg)
    [ $# -eq 1 ] || die "usage: scripts/install.sh list-xorg"
    xorg_manifest | while read -r path _; do echo "$destdir$path"; done
    ;;
  *)
    die "usage: scripts/install.sh install SHIELDCTL | install-xorg MODULE | uninstall | list | list-xorg"
    ;;
esac
