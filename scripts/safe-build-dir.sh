#!/usr/bin/env bash
# The Xorg module trusts a program only when its file and every directory above it are
# root's and writable by root alone (rule identity). The tests trust their own binaries (the
# daemon, the test process), so the build directory must be in such a place. When this
# tree lies below a directory others may write (a clone under /tmp), .build becomes a
# symlink into /var/cache/captureshield-build (root's), one directory per tree; the kernel
# reports /proc/PID/exe resolved, so the module sees the safe path.
set -euo pipefail
cd "$(dirname "$0")/.."
unsafe=""
d=$(pwd -P)
while :; do
  if [ "$(stat -c %u "$d")" != 0 ] || [ $(( 0$(stat -c %a "$d") & 022 )) != 0 ]; then
    unsafe=$d
  fi
  [ "$d" = / ] && break
  d=$(dirname "$d")
done
[ -z "$unsafe" ] && exit 0
[ -L .build ] && exit 0
[ "$(id -u)" = 0 ] || {
  echo "note: $unsafe is writable by others; the Xorg module will not trust binaries built here" >&2
  exit 0
}
target=/var/cache/captureshield-build/$(pwd -P | sha256sum | cut -c1-16)
mkdir -p /var/cache/captureshield-build "$target"
chmod 755 /var/cache/captureshield-build "$target"
if [ -d .build ]; then
  cp -a .build/. "$target"/
  rm -rf .build
fi
ln -s "$target" .build
echo "note: $unsafe is writable by others: .build is $target (the Xorg module trusts only binaries under root-only directories)" >&2
