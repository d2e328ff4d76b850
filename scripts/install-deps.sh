#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages CaptureShield needs, only those missing.
# Usage: scripts/install-deps.sh [build|test|demo|bench|xorg|deb]   (default: test)
set -euo pipefail
what=${1:-test}
build=(pkg-config libxcb1-dev libxcb-composite0-dev libxcb-record0-dev libxcb-res0-dev
       libxcb-xfixes0-dev libxcb-shape0-dev libxcb-damage0-dev libxcb-shm0-dev libxcb-render0-dev
       libxcb-randr0-dev
       libsodium-dev libdbus-1-dev)
run=(xvfb x11-apps x11-utils x11-xserver-utils imagemagick)
tools=(ffmpeg xdotool openbox scrot maim xclip picom xfonts-base valgrind strace
       systemd groff-base man-db zsh fish bash-completion desktop-file-utils weston xwayland
       keepassxc zenity)   # the real apps of RealAppTests
# the real desktops (DesktopTests): their window managers and compositors, each with the
# pieces it needs to start (marco: MATE's mouse settings schema; kwin: its Breeze
# decorations; i3: i3bar and i3status), and a session bus of the test's own
desktops=(xfwm4 marco mate-settings-daemon-common mutter kwin-x11 kwin-style-breeze i3 i3-wm i3status
          picom openbox dbus-daemon dbus-x11)
# the Xorg module (xorg/): its SDK, a headless Xorg to test it in, the probes' libraries,
# openbox (a real window manager framing a secure window), xinput (tests/t-input.sh),
# xcb-proto (the protocol's XML) and x11-utils (xdpyinfo) for tests/t-inventory.sh and
# scripts/gen-inventory.py
xorg=(gcc make pkg-config xserver-xorg-core xserver-xorg-video-dummy xserver-xorg-dev
      libxcb1-dev libxcb-shm0-dev libxcb-render0-dev libxcb-composite0-dev libxcb-record0-dev
      x11-apps imagemagick ffmpeg scrot maim openbox xinput xcb-proto x11-utils python3
      picom xkbset x11-xkb-utils x11-xserver-utils)   # t-compositor, t-keymap
# adversaries of the other byte order (tests/t-fuzz.sh): the probes cross-built for s390x
# (big-endian), linked statically against its libxcb, run by qemu-user
xorg+=(qemu-user gcc-s390x-linux-gnu libc6-dev-s390x-cross libxcb1-dev:s390x libxcb-shm0-dev:s390x
       libxcb-render0-dev:s390x libxcb-composite0-dev:s390x libxcb-record0-dev:s390x
       libxau-dev:s390x libxdmcp-dev:s390x)
# `make deb`: dpkg-shlibdeps, file (strip decides by it), lintian to check the packages;
# the module's dependency is derived from the installed xserver-xorg-core
deb=(dpkg-dev file binutils lintian xserver-xorg-core)
# NotificationTests: a private session bus (dbus-daemon, dbus-monitor) and a real
# notification server on it (dunst, dunstctl)
tools+=(dbus-daemon dbus-bin dunst)
# PasswordFieldTests (IntegrationTests): the accessibility bus (at-spi-bus-launcher and
# at-spi2-registryd), GTK 3's bridge to it (libatk-bridge2.0-0), xinput (a listener);
# scripts/bench-accessibility.sh (make bench) also bc
tools+=(at-spi2-core libatk-bridge2.0-0 xinput bc)
# XpraTests: xpra (its shadow server and its screenshot client, python scripts)
tools+=(xpra)
# LearnTests and bench row 10: a GTK screenshot tool and a Qt one (the smallest downloads:
# gnome-screenshot 175 KB + libhandy, flameshot 684 KB; xfce4-screenshooter needs 3
# packages, ksnip 4)
tools+=(gnome-screenshot flameshot)
# BuiltinSecureAppTests: the password managers and credential prompts of the built-in
# secure list, run for real (docs/policy.md, "Built-in secure programs")
tools+=(keepass2 pinentry-gtk2 pinentry-qt pinentry-fltk pinentry-x2go pinentry-gnome3 gcr
        ssh-askpass ssh-askpass-gnome ksshaskpass ssh-askpass-fullscreen kwalletmanager libkf5wallet-bin lxpolkit)
# scripts/bench-desktop.sh (make bench): an ordinary desktop's apps besides zenity (GTK 3):
# a terminal (xterm), a small Qt 5 editor (featherpad) and a light browser (dillo, FLTK;
# surf pulls WebKitGTK, netsurf-gtk is 3 times dillo's size)
desk=(xterm featherpad dillo xdotool openbox zenity valgrind)
case "$what" in
  build) want=("${build[@]}") ;;
  demo) want=("${build[@]}" "${run[@]}" ffmpeg xfonts-base) ;;
  test) want=("${build[@]}" "${run[@]}" "${tools[@]}" "${xorg[@]}" "${desktops[@]}") ;;
  bench) want=("${build[@]}" "${run[@]}" "${tools[@]}" "${xorg[@]}" "${desk[@]}") ;;
  xorg) want=("${xorg[@]}") ;;
  deb) want=("${build[@]}" "${xorg[@]}" "${deb[@]}") ;;
  *) echo "Error: unknown set '$what' (build, test, demo, bench, xorg, deb)" >&2; exit 64 ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing missing packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "Error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# packages of another architecture (name:arch) need it added to dpkg first; Debian's mirrors
# carry s390x, Ubuntu's main archive does not (ports.ubuntu.com does: add it by hand)
for p in "${missing[@]}"; do
  arch=${p#*:}
  [ "$arch" != "$p" ] || continue
  dpkg --print-foreign-architectures | grep -qx "$arch" && continue
  if grep -qi '^ID=ubuntu' /etc/os-release 2>/dev/null; then
    echo "Error: $p: Ubuntu's archive has no $arch packages; add ports.ubuntu.com for $arch" \
      "(deb [arch=$arch] http://ports.ubuntu.com/ubuntu-ports ...) and run this again" >&2
    exit 1
  fi
  echo "Adding the $arch architecture to dpkg (for $p)" >&2
  $sudo dpkg --add-architecture "$arch"
done
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
