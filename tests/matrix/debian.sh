#!/usr/bin/env bash
# Builds ephpm and runs its suites on a newer Debian, in a chroot: PHP 8.4
# with that release's Symfony Lock, Laravel cache, psr/simple-cache and
# phpunit on the in-process store, and the Redis backend's suites (phpt,
# the Cluster subset, the adapters, the Go contract suite) on its servers
# (sid: Valkey 9 and Redis 8.0; trixie: Valkey 8.1, without the Cluster
# subset; tests/matrix/inside.sh says why), and the wordpress entry with
# that release's WordPress, MariaDB and php-fpm (trixie: WordPress 6.8,
# sid: 7.x). Then the Debian packages for that PHP: scripts/deb.sh builds
# php8.4-ephpm and ephpm in the chroot, and tests/deb_check.sh installs
# them into a fresh copy of it (an overlay: the chroot never sees them) and
# checks them as deb-package does on Debian 12 (php -m, one winner among 20
# php-fpm workers, remove and purge leaving nothing, lintian, the chroot's,
# with no error: its warnings are printed).
#
# The chroot is made once with debootstrap and reused while it is current
# (the same package list, made less than a week ago); it lives outside the
# source tree, in $EPHPM_CHROOT_DIR (default /var/cache/ephpm). The source
# tree, Go's installation and Go's module cache are bind-mounted into it;
# every mount is undone and every server it started is stopped on exit.
#
# Usage: tests/matrix/debian.sh [SUITE]   (SUITE: trixie, or sid, the default)
# Needs root (debootstrap, mount, chroot); exits 77 (skipped) without it.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
suite=${1:-sid}
if [ "$(id -u)" != 0 ]; then
  echo "matrix: needs root for debootstrap, mount and chroot: skipped"
  exit 77
fi

packages=(php8.4-cli php8.4-dev php8.4-xml php8.4-mbstring cmake gcc make ca-certificates
          phpunit php-symfony-lock php-illuminate-cache php-psr-simple-cache
          valkey-server valkey-tools redis-server redis-tools
          wordpress wordpress-theme-twentytwentyfive mariadb-server php8.4-mysql php8.4-fpm libfcgi-bin
          build-essential dpkg-dev debhelper dh-php lintian)
root=${EPHPM_CHROOT_DIR:-/var/cache/ephpm}/debian-$suite
stamp="$root/.ephpm-packages"
want="$suite ${packages[*]}"
mirror=http://deb.debian.org/debian
# sid's index is served with an expired Valid-Until.
apt_opts=(-o Acquire::Check-Valid-Until=false -qq)

. scripts/go-env.sh
go_root=$(go env GOROOT)
go_modcache=$(go env GOMODCACHE)
go mod download # the modules (and the toolchain go.mod names) the chroot builds with

# One run at a time per chroot: runs share its /src mount and /build.
mkdir -p "$(dirname "$root")"
exec 9> "$root.lock"
flock 9

. "$src/tests/chroot.sh"
# A run killed by a timeout left its mounts: undo them before anything else.
chroot_unmount "$root" || { echo "matrix: a mount under $root stays"; exit 1; }

mounted=()
cleanup() {
  # Servers started inside the chroot by a test that failed halfway.
  for pid in $(pgrep -f "^(redis-server|valkey-server|/usr/sbin/mariadbd|php-fpm: master)" || true); do
    if [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ]; then kill "$pid" 2>/dev/null || true; fi
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -lR "${mounted[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT

bind() { # bind HOST_PATH CHROOT_PATH
  mkdir -p "$root$2"
  mount --rbind "$1" "$root$2"
  mount --make-rslave "$root$2"
  mounted+=("$root$2")
}

current() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -z "$(find "$stamp" -mtime +6)" ]
}

if ! current; then
  echo "matrix: making a Debian $suite chroot in $root"
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  chroot_remove "$root.new"
  debootstrap --variant=minbase "$suite" "$root.new" "$mirror" > "$root.new.log" 2>&1 \
    || { tail -20 "$root.new.log"; exit 1; }
  # No service starts inside the chroot when its package is installed.
  printf '#!/bin/sh\nexit 101\n' > "$root.new/usr/sbin/policy-rc.d"
  chmod +x "$root.new/usr/sbin/policy-rc.d"
  mount -t proc proc "$root.new/proc"
  if ! { chroot "$root.new" apt-get "${apt_opts[@]}" update \
         && chroot "$root.new" env DEBIAN_FRONTEND=noninteractive \
              apt-get "${apt_opts[@]}" install -y --no-install-recommends "${packages[@]}"; } \
       > "$root.new.log" 2>&1; then
    umount "$root.new/proc"
    tail -20 "$root.new.log"
    exit 1
  fi
  umount "$root.new/proc"
  chroot "$root.new" apt-get clean
  chroot_remove "$root"
  mv "$root.new" "$root"
  echo "$want" > "$stamp"
fi

mount -t proc proc "$root/proc"
mounted+=("$root/proc")
chroot_dev "$root"
mounted+=("$root/dev")
bind "$src" /src
bind "$go_root" /usr/local/go
bind "$go_modcache" "$go_modcache"

chroot "$root" php -v | head -1
chroot "$root" sh -c 'redis-server --version; valkey-server --version; phpunit --version | head -1'
in_chroot() {
  chroot "$root" env -i HOME=/root PATH=/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOMODCACHE="$go_modcache" GOFLAGS=-mod=mod GOCACHE=/root/.cache/go-build EPHPM_MATRIX_SUITE="$suite" "$@"
}
failed=0
in_chroot bash /src/tests/matrix/inside.sh || failed=1

# The packages for this PHP: built in the chroot, checked in a fresh copy of
# it. The tree's files are listed here, where git and the tree's git
# metadata are (scripts/deb.sh copies those into its build).
php=$(chroot "$root" php-config --version | cut -d. -f1,2)
echo "== php$php-ephpm and ephpm packages: scripts/deb.sh, then tests/deb_check.sh"
packages_start=$SECONDS
out=/build/deb-out
chroot_remove "$root$out"
mkdir -p "$root$out"
deb_env=(DEB_BUILD_OPTIONS=noautodbgsym) # no -dbgsym package: its compression alone takes seconds
if git -C "$src" ls-files -z --cached --others --exclude-standard > "$root$out/files" 2>/dev/null; then
  commit=$(git -C "$src" rev-parse --short=12 HEAD)
  [ -z "$(git -C "$src" status --porcelain)" ] || commit="$commit, with uncommitted changes"
  deb_env+=(EPHPM_DEB_FILES="$out/files" EPHPM_DEB_BUILT_FROM="commit $commit"
            SOURCE_DATE_EPOCH="$(git -C "$src" log -1 --format=%ct)")
fi
if deb=$(in_chroot "${deb_env[@]}" bash /src/scripts/deb.sh "$out" | tee "$root$out/deb.log" | tail -1) \
   && [ -f "$root$deb" ]; then
  grep -v "^$deb\$" "$root$out/deb.log" || true
  echo "(built in $((SECONDS - packages_start)) s)"
  version=$(dpkg-deb -f "$root$deb" Version)
  "$src/tests/deb_check.sh" "$root" "$php" "$root$deb" \
    "$root$out/ephpm_${version}_$(dpkg --print-architecture).deb" || failed=1
else
  cat "$root$out/deb.log"
  echo "FAIL: scripts/deb.sh built no php$php-ephpm package"
  failed=1
fi
echo "(the packages: $((SECONDS - packages_start)) s)"
[ "$failed" = 0 ]
