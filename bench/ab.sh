#!/usr/bin/env bash
# A/B of two builds of the extension on a shared machine: runs a PHP bench
# script ROUNDS times with the library in dir A and in dir B in turn (A, B,
# A, B, ...), so that a busy spell falls on both alike, and prints each
# run's output line by line prefixed with its build. Copy build/modules
# aside before a change to keep the old build as A.
#
# Usage: bench/ab.sh A_MODULES B_MODULES ROUNDS SCRIPT [ARGS...]
# Settings for the runs go in AB_PHP_ARGS (for example
# AB_PHP_ARGS='-d ephpm.kv_backend=shm://ab'), and those of one side only in
# AB_A_ARGS or AB_B_ARGS (two layout versions of a segment need a segment
# each: AB_A_ARGS='-d ephpm.kv_backend=shm://ab-a' AB_B_ARGS='-d
# ephpm.kv_backend=shm://ab-b').
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,14p' "$0"; exit 2; }
a=$1 b=$2 rounds=$3
shift 3
# Each side's compiler flags, from its DWARF producer string (a build
# without -g, such as CMake's Release, has none): an A/B of an -O0 build
# against an optimised one measures the compiler, not the change.
for side in "A $a" "B $b"; do
  producer=$(readelf --debug-dump=info "${side#* }/ephpm.so" 2>/dev/null | grep -m1 DW_AT_producer || true)
  [ -n "$producer" ] && producer=${producer##*: } || producer="no DWARF (built without -g): flags unknown"
  echo "$side/ephpm.so: $producer"
done
for ((r = 1; r <= rounds; r++)); do
  for side in A B; do
    dir=$a side_args=${AB_A_ARGS:-}
    [ "$side" = B ] && dir=$b side_args=${AB_B_ARGS:-}
    # shellcheck disable=SC2086
    php -n -d extension=apcu -d apc.enable_cli=1 -d apc.shm_size=256M \
        -d "extension=$dir/ephpm.so" -d ephpm.kv_memory_limit=256M ${AB_PHP_ARGS:-} $side_args "$@" |
      sed "s/^/$side $r: /"
  done
done
grep -m1 'model name' /proc/cpuinfo
