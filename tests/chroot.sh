# Sourced by the scripts that run suites in a Debian chroot
# (tests/matrix/debian.sh, tests/deb_install.sh): the chroot's /dev, and the
# removal of a chroot.
#
# A chroot's /dev is a tmpfs of its own with the nodes the suites use, never
# a bind mount of the host's /dev: a run killed by a timeout leaves its
# mounts behind, and a later `rm -rf` of the chroot would then remove the
# host's device nodes through the bind mount.

# chroot_dev ROOT mounts ROOT/dev: null, zero, full, random, urandom, tty,
# a devpts instance of its own, a tmpfs /dev/shm (where segments are made)
# and the fd links. The caller unmounts ROOT/dev recursively.
chroot_dev() {
  local dev=$1/dev
  mkdir -p "$dev"
  mount -t tmpfs -o mode=755,size=1m tmpfs "$dev"
  mknod -m 666 "$dev/null" c 1 3
  mknod -m 666 "$dev/zero" c 1 5
  mknod -m 666 "$dev/full" c 1 7
  mknod -m 666 "$dev/random" c 1 8
  mknod -m 666 "$dev/urandom" c 1 9
  mknod -m 666 "$dev/tty" c 5 0
  mkdir "$dev/pts" "$dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$dev/pts"
  ln -s pts/ptmx "$dev/ptmx"
  mount -t tmpfs -o mode=1777,size=512m tmpfs "$dev/shm"
  ln -s /proc/self/fd "$dev/fd"
  ln -s /proc/self/fd/0 "$dev/stdin"
  ln -s /proc/self/fd/1 "$dev/stdout"
  ln -s /proc/self/fd/2 "$dev/stderr"
}

# chroot_unmount DIR undoes every mount at or under DIR, deepest first (a
# killed run's leftovers too), and fails if one stays.
chroot_unmount() {
  local dir m
  dir=$(realpath -m "$1")
  for m in $(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  ! awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts
}

# chroot_remove DIR removes a chroot once nothing is mounted under it; rm
# stays on DIR's file system as a second guard.
chroot_remove() {
  [ -e "$1" ] || return 0
  chroot_unmount "$1" || { echo "$1: a mount under it stays; not removed" >&2; return 1; }
  rm -rf --one-file-system "$1"
}
