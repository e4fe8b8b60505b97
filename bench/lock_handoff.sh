#!/usr/bin/env bash
# How fast a released lock passes to a waiting process (issue 29): PROCS
# PHP processes take one lock in turn, ROUNDS times each, holding it
# HOLD_US µs (bench/php/lock_handoff.php), with flock(2) on a file, and
# with ephpm_kv_lock on the default in-process store's alternative, a
# shared-memory segment, and on a redis-server started here on a free
# port (stopped by PID), plain and bound to the process. Prints the CPU and,
# per lock, the hand-off (one holder's release call to the next holder's
# grant, in PHP on hrtime's clock): p10, median, p90.
#
# Usage: bench/lock_handoff.sh [PROCS [ROUNDS [HOLD_US]]]
#   (after scripts/setup.sh test; default 2 300 5000)
#   EXT=other/ephpm.so bench/lock_handoff.sh: another build (an A/B).
#   SERVER="bench/chroot-server.sh valkey-server" bench/lock_handoff.sh: on
#   Valkey (the test matrix's chroot), or any command that runs a server.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
procs=${1:-2} rounds=${2:-300} hold=${3:-5000}
read -r -a server <<< "${SERVER:-redis-server}"
ext=${EXT:-$src/build/modules/ephpm.so}
[ -f "$ext" ] || { echo "build first: scripts/setup.sh test"; exit 1; }
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
  rm -f /dev/shm/ephpm-bench-handoff-$$.*
}
trap cleanup EXIT
. "$src/tests/listen.sh" # listen_free_port
port=$(listen_free_port)
"${server[@]}" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" > "$dir/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 500); do [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break; sleep 0.01; done

# handoffs OUT...: p10, median and p90 of the gaps between one hold's
# release and the next hold's grant, over every process's holds.
handoffs() {
  cat "$@" | sort -n | awk '
    NR > 1 { g = ($1 - last) / 1000; if (g >= 0) gaps[n++] = g }
    { last = $2 }
    END {
      m = asort(gaps)
      printf "p10 %5.0f µs   median %5.0f µs   p90 %5.0f µs   (%d hand-offs)\n",
        gaps[int(m * 0.1) + 1], gaps[int(m * 0.5) + 1], gaps[int(m * 0.9) + 1], m
    }'
}
run() { # run LABEL MODE PHP-ARGS...
  local label=$1 mode=$2
  shift 2
  rm -f "$dir"/out.*
  local ps=()
  for p in $(seq "$procs"); do
    php -n -d "extension=$ext" "$@" "$src/bench/php/lock_handoff.php" "$mode" "$rounds" "$hold" "$dir/out.$p" "$dir/lockfile" &
    ps+=($!)
  done
  for p in "${ps[@]}"; do wait "$p"; done
  printf '%-34s ' "$label"
  handoffs "$dir"/out.*
}
echo "date:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "server: $(redis-cli -p "$port" INFO server | grep -E '^(redis|valkey)_version' | tr -d '\r' | tr '\n' ' ')"
echo "$procs processes, $rounds holds each of $hold µs"
run "flock(2)" flock
run "ephpm, shm segment" bound -d "ephpm.kv_backend=shm://bench-handoff-$$"
run "ephpm, Redis" plain -d "ephpm.kv_backend=redis://127.0.0.1:$port"
run "ephpm, Redis, bound: true" bound -d "ephpm.kv_backend=redis://127.0.0.1:$port"
