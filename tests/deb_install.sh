#!/usr/bin/env bash
# The Debian package, as a user gets it, on Debian 12: scripts/deb.sh
# builds php8.2-ephpm_<version>_amd64.deb (the extension) and
# ephpm_<version>_amd64.deb (the ephpm command) from this tree, and
# tests/deb_check.sh installs them into a fresh copy of a Debian 12 chroot
# and checks them there (what it checks: its header): apt-get install, php
# -m, phpenmod for cli, fpm and apache2, ephpm.ini, one winner among 20
# php-fpm workers on the pool's segment, the ephpm command on it, remove and
# purge leaving nothing, lintian (the host's) with no error. The matrix
# (tests/matrix/debian.sh) runs the same checks on the PHP 8.4 package in
# its Debian 13 and unstable chroots.
#
# The chroot's base (Debian 12 minbase with php8.2-fpm, php8.2-cli,
# libapache2-mod-php8.2 and libfcgi-bin) is made once with debootstrap and
# reused while it is current (the same package list, made less than a week
# ago), in ${EPHPM_CHROOT_DIR:-/var/cache/ephpm}/debian-bookworm-deb; each
# run installs the package into an overlay of it (a fresh copy, dropped
# afterwards), so the base never sees the package. The script runs in a
# mount namespace of its own: every mount it makes is undone on exit.
#
# Usage: tests/deb_install.sh
# Needs root (debootstrap, mount, chroot) and debootstrap; exits 77
# (skipped) without them.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/chroot.sh"
if [ "$(id -u)" != 0 ]; then
  echo "deb-package: needs root for debootstrap, mount and chroot: skipped"
  exit 77
fi
if ! command -v debootstrap >/dev/null && [ ! -x /usr/sbin/debootstrap ]; then
  echo "deb-package: no debootstrap (scripts/setup.sh test installs it): skipped"
  exit 77
fi
export PATH=$PATH:/usr/sbin:/sbin
if [ "$(php-config --version 2>/dev/null | cut -d. -f1,2)" != 8.2 ]; then
  echo "deb-package: scripts/deb.sh builds for this host's PHP, and the chroot is Debian 12's (PHP 8.2): skipped"
  exit 77
fi
# A mount namespace of our own: nothing mounted here is seen outside.
# Private propagation needs / to be a mount point, which it is not in a
# chroot (a fresh machine made with debootstrap): there the namespace keeps
# the parent's propagation, and the cleanup below undoes every mount.
if [ -z "${EPHPM_DEB_UNSHARED:-}" ]; then
  propagation=private
  unshare --mount --propagation private true 2>/dev/null || propagation=unchanged
  exec unshare --mount --propagation "$propagation" env EPHPM_DEB_UNSHARED=1 "$0" "$@"
fi

suite=bookworm php=8.2
packages=(php$php-cli php$php-fpm libapache2-mod-php$php libfcgi-bin ca-certificates)
# As an installed Debian 12 has them: the release, its updates and its
# security updates (the package needs the PHP it was built against, or later).
sources="deb http://deb.debian.org/debian $suite main
deb http://deb.debian.org/debian $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main"
base=${EPHPM_CHROOT_DIR:-/var/cache/ephpm}/debian-$suite-deb
stamp="$base/.ephpm-packages"
want="$suite ${packages[*]} $(md5sum <<< "$sources" | cut -c1-8)"
mirror=http://deb.debian.org/debian
start=$SECONDS
phase() { echo "== $* ($((SECONDS - start)) s)"; }

tmp=$(mktemp -d)
mounted=()
cleanup() {
  local pid
  # Anything still running in a base being made.
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    case $(readlink "/proc/$pid/root" 2>/dev/null) in "$base.new") kill -KILL "$pid" 2>/dev/null || true ;; esac
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -lR "${mounted[$i]}" 2>/dev/null || true
  done
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# --- the package ---------------------------------------------------------------
phase "building the package with scripts/deb.sh"
# (Without the -dbgsym package, which this test does not use: its
# compression alone takes seconds.)
deb=$(DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} noautodbgsym" "$src/scripts/deb.sh" "$tmp/out" | tee "$tmp/deb.log" | tail -1)
grep -v "^$deb\$" "$tmp/deb.log" || true
[ -f "$deb" ] || { echo "FAIL: scripts/deb.sh built no package"; exit 1; }
version=$(dpkg-deb -f "$deb" Version)
command_deb=$(dirname "$deb")/ephpm_${version}_$(dpkg --print-architecture).deb
[ -f "$command_deb" ] || { echo "FAIL: scripts/deb.sh built no $(basename "$command_deb")"; exit 1; }

# --- the chroot ----------------------------------------------------------------
mkdir -p "$(dirname "$base")"
exec 9> "$base.lock"
flock 9 # one run at a time: a base made anew under a running overlay would break it
current() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -z "$(find "$stamp" -mtime +6)" ]
}
if ! current; then
  phase "making a Debian $suite chroot in $base (once a week)"
  chroot_remove "$base.new"
  debootstrap --variant=minbase "$suite" "$base.new" "$mirror" > "$base.new.log" 2>&1 \
    || { tail -20 "$base.new.log"; exit 1; }
  # No service starts inside the chroot when its package is installed.
  printf '#!/bin/sh\nexit 101\n' > "$base.new/usr/sbin/policy-rc.d"
  chmod +x "$base.new/usr/sbin/policy-rc.d"
  echo "$sources" > "$base.new/etc/apt/sources.list"
  mount -t proc proc "$base.new/proc"
  mounted+=("$base.new/proc")
  if ! { chroot "$base.new" apt-get -qq update \
         && chroot "$base.new" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y upgrade \
         && chroot "$base.new" env DEBIAN_FRONTEND=noninteractive \
              apt-get -qq install -y --no-install-recommends "${packages[@]}"; } >> "$base.new.log" 2>&1; then
    tail -20 "$base.new.log"
    exit 1
  fi
  umount "$base.new/proc"
  unset 'mounted[-1]'
  chroot "$base.new" apt-get clean # the package lists stay: apt resolves dependencies with them
  chroot_remove "$base"
  mv "$base.new" "$base"
  echo "$want" > "$stamp"
fi

# The packages in a fresh copy of the base (the lock above is still held).
phase "tests/deb_check.sh: the packages in a fresh copy of the Debian $suite chroot"
"$src/tests/deb_check.sh" "$base" "$php" "$deb" "$command_deb"
