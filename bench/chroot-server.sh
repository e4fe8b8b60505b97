#!/usr/bin/env bash
# Runs a server of the Debian unstable chroot that the test matrix makes
# (tests/matrix/debian.sh: Valkey 9, Redis 8) on the host's loopback, for a
# benchmark to set beside the host's redis-server:
#
#   go run ./bench/sessions -valkey "bench/chroot-server.sh valkey-server"
#
# The chroot shares the host's network; the server's --dir is the chroot's
# /tmp. Run the test command once first (it makes the chroot), as root.
set -euo pipefail
root=${EPHPM_CHROOT_DIR:-/var/cache/ephpm}/debian-sid
[ -x "$root/usr/bin/$1" ] || { echo "$root has no $1: run the test command first" >&2; exit 1; }
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --dir) shift; args+=(--dir /tmp) ;;
    *) args+=("$1") ;;
  esac
  shift
done
exec chroot "$root" "${args[@]}"
