#!/usr/bin/env bash
# Builds the Debian packages of what `make install` and `make install-xorg-module` put in
# place, into .build/deb/ (`make deb` builds first, then runs this):
#   captureshield              shieldctl, its man page, the systemd user unit, the XDG
#                              autostart entry, the example policy, the shell completions
#   captureshield-xorg-module  the Xorg extension module and its xorg.conf.d snippet, for
#                              the xserver-xorg-core upstream version it was built against
# No debhelper: each package is staged by `make install... DESTDIR=... PREFIX=/usr
# SYSCONFDIR=/etc NOBUILD=1`, finished by hand (stripped binaries, gzipped man page and
# changelog, copyright, conffiles, md5sums, control) and built by `dpkg-deb --build
# --root-owner-group`. Needs dpkg-dev (dpkg-shlibdeps); lintian checks the result.
# Environment: DEB_MAINTAINER (default: the last commit's author), DEB_REVISION (1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.build/deb
die() { echo "deb.sh: error: $*" >&2; exit 1; }

bin=$root/.build/release/shieldctl
module=$root/.build/xorg/libcaptureshield.so
[ -x "$bin" ] || die "$bin is missing (make release)"
[ -f "$module" ] || die "$module is missing (make xorg-module)"
command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null ||
  die "dpkg-deb and dpkg-shlibdeps are needed (scripts/install-deps.sh deb)"

upstream=$(sed -n 's/.*string = "\([^"]*\)".*/\1/p' "$root/Sources/CaptureShield/Version.swift")
[ -n "$upstream" ] || die "no version in Sources/CaptureShield/Version.swift"
version=$upstream-${DEB_REVISION:-1}
arch=$(dpkg --print-architecture)
maintainer=${DEB_MAINTAINER:-$(git -C "$root" log -1 --format='%an <%ae>' 2>/dev/null || true)}
[ -n "$maintainer" ] || die "set DEB_MAINTAINER='Name <email>'"
date=$(git -C "$root" log -1 --format=%ad --date=rfc2822 2>/dev/null || date -R)
year=$(date -d "$date" +%Y)

# the server the module was built against: epoch:upstream of xserver-xorg-core, the
# module's dependency range is that major.minor series (same extension ABI)
xver=$(dpkg-query -W -f='${Version}' xserver-xorg-core 2>/dev/null) ||
  die "xserver-xorg-core is not installed: the module's dependency is derived from it"
xepoch=; [[ $xver == *:* ]] && xepoch=${xver%%:*}:
xup=${xver#*:}; xup=${xup%%-*}
xmaj=${xup%%.*}; xrest=${xup#*.}; xmin=${xrest%%.*}
[[ $xmaj =~ ^[0-9]+$ && $xmin =~ ^[0-9]+$ ]] || die "cannot parse xserver-xorg-core version '$xver'"
xdepends="xserver-xorg-core (>= $xepoch$xmaj.$xmin), xserver-xorg-core (<< $xepoch$xmaj.$((xmin + 1)))"

xabi=$(pkg-config --variable=abi_extension xorg-server 2>/dev/null || echo unknown)

rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# shlibs:Depends of the ELF files given, by dpkg-shlibdeps (it wants a debian/control)
shlibdeps() {
  mkdir -p "$work/shlibs/debian"
  printf 'Source: captureshield\n\nPackage: captureshield\nArchitecture: any\n' \
    >"$work/shlibs/debian/control"
  (cd "$work/shlibs" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

# finish PKG DIR: strip ELF files, gzip the man pages, copyright and changelog, md5sums,
# conffiles for everything in /etc
finish() {
  local pkg=$1 d=$2 f
  while IFS= read -r f; do
    if file -b "$f" | grep -q '^ELF'; then
      strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
    fi
  done < <(find "$d" -type f)
  if [ -d "$d/usr/share/man" ]; then
    find "$d/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +
  fi
  install -d -m 0755 "$d/usr/share/doc/$pkg"
  cat >"$d/usr/share/doc/$pkg/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: CaptureShield
Upstream-Contact: $maintainer

Files: *
Copyright: $year CaptureShield maintainers
License: proprietary
 No licence has been chosen for CaptureShield yet: all rights are reserved by
 its authors. Until a licence is chosen, this package may be installed and used
 but not redistributed.
COPY
  cat >"$work/changelog" <<CHANGES
$pkg ($version) unstable; urgency=medium

  * Package of CaptureShield $upstream, built by scripts/deb.sh.

 -- $maintainer  $date
CHANGES
  gzip -9nc "$work/changelog" >"$d/usr/share/doc/$pkg/changelog.Debian.gz"
  chmod 0644 "$d/usr/share/doc/$pkg/copyright" "$d/usr/share/doc/$pkg/changelog.Debian.gz"
  # not an upload to Debian: no ITP bug to close
  install -d -m 0755 "$d/usr/share/lintian/overrides"
  printf '%s: initial-upload-closes-no-bugs\n' "$pkg" >"$d/usr/share/lintian/overrides/$pkg"
  chmod 0644 "$d/usr/share/lintian/overrides/$pkg"
  install -d -m 0755 "$d/DEBIAN"
  if [ -d "$d/etc" ]; then
    (cd "$d" && find etc -type f | sed 's|^|/|' | sort) >"$d/DEBIAN/conffiles"
    chmod 0644 "$d/DEBIAN/conffiles"
  fi
  (cd "$d" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
    LC_ALL=C sort -z | xargs -0 md5sum) >"$d/DEBIAN/md5sums"
  chmod 0644 "$d/DEBIAN/md5sums"
  find "$d" -type d -exec chmod 0755 {} +
}

# control PKG DIR DEPENDS SECTION SHORT LONG...: DEBIAN/control
control() {
  local pkg=$1 d=$2 depends=$3 section=$4 short=$5; shift 5
  local size
  size=$(du -sk --exclude=DEBIAN "$d" | cut -f1)
  {
    echo "Package: $pkg"
    echo "Source: captureshield"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $size"
    echo "Depends: $depends"
    echo "Section: $section"
    echo "Priority: optional"
    echo "Description: $short"
    local line
    for line in "$@"; do
      if [ -z "$line" ]; then echo " ."; else echo " $line"; fi
    done
  } >"$d/DEBIAN/control"
  chmod 0644 "$d/DEBIAN/control"
}

# --- captureshield
d=$work/captureshield
make -s -C "$root" install DESTDIR="$d" PREFIX=/usr SYSCONFDIR=/etc NOBUILD=1 >/dev/null
finish captureshield "$d"
deps=$(shlibdeps -e"$d/usr/bin/shieldctl")
[ -n "$deps" ] || die "dpkg-shlibdeps found no dependencies of shieldctl"
control captureshield "$d" "$deps" x11 "protects chosen windows from screen capture on X11" \
  "CaptureShield keeps the contents of chosen windows (password managers, chats," \
  "anything a policy names) out of screenshots, screen recordings and screen" \
  "sharing on an X11 desktop. Its daemon, shieldctl watch, starts at desktop" \
  "login (XDG autostart entry, or the systemd user unit), covers protected" \
  "windows with a shield that every X capture path sees instead of their pixels," \
  "and reports which programs capture the screen." \
  "" \
  "Without the captureshield-xorg-module package, protection is done from the" \
  "client side and is best effort; with it, the X server itself refuses or" \
  "censors reads of protected windows by untrusted clients." \
  "" \
  "This package contains shieldctl, its manual page, shell completions for bash," \
  "zsh and fish, and an example policy."
dpkg-deb --build --root-owner-group "$d" "$out/captureshield_${version}_$arch.deb" >/dev/null

# --- captureshield-xorg-module
d=$work/captureshield-xorg-module
make -s -C "$root" install-xorg-module DESTDIR="$d" PREFIX=/usr SYSCONFDIR=/etc NOBUILD=1 >/dev/null
finish captureshield-xorg-module "$d"
sodeps=$(shlibdeps "$d"/usr/lib/xorg/modules/extensions/libcaptureshield.so)
control captureshield-xorg-module "$d" \
  "${sodeps:+$sodeps, }$xdepends, captureshield (= $version)" x11 \
  "X server extension that enforces CaptureShield's window protection" \
  "An Xorg server module that makes the X server refuse or censor (paint" \
  "black) every read of a protected window's pixels by untrusted clients:" \
  "GetImage (also through MIT-SHM), CopyArea, RENDER, Composite's" \
  "NameWindowPixmap, DRI3 pixmap exports. It is loaded through" \
  "/etc/X11/xorg.conf.d/50-captureshield.conf, which names shieldctl as" \
  "the daemon (trusted only as 'shieldctl watch'); the daemon grants the" \
  "compositor after its own checks." \
  "" \
  "Built against xserver-xorg-core $xver (extension ABI $xabi): the X" \
  "server refuses to load it on another major ABI. It takes effect at the" \
  "next start of the X server."
dpkg-deb --build --root-owner-group "$d" "$out/captureshield-xorg-module_${version}_$arch.deb" >/dev/null

for f in "$out"/*.deb; do echo "built $f"; done
