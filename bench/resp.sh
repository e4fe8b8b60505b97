#!/usr/bin/env bash
# redis-benchmark against redis-server and against `ephpm serve` on a
# segment, in one run, printed side by side with the CPU and the date:
#   redis-benchmark -t get,set -P 16 -n 200000 -q
# Each server is started here on a free loopback port and stopped by PID;
# the segment (made through the PHP extension, as a server's first call
# makes it) is removed after. ROUNDS runs alternate the servers (A, B, A,
# B, ...) so that a busy spell of a shared machine falls on both alike;
# the table gives each run. BENCH_ARGS replaces the benchmark's arguments.
#
# Usage: bench/resp.sh [ROUNDS]   (after scripts/setup.sh test; default 3)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
ext=$src/build/modules/ephpm.so ephpm=$src/build/bin/ephpm
args=${BENCH_ARGS:--t get,set -P 16 -n 200000 -q}
[ -x "$ephpm" ] && [ -f "$ext" ] || { echo "build first: scripts/setup.sh test"; exit 1; }
dir=$(mktemp -d)
seg=bench-resp-$$
mapfile -t seg_files < <("$ephpm" --segment "$seg" path) # its files, as the command names them
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -f "${seg_files[@]}"
  rm -rf "$dir"
}
trap cleanup EXIT
. "$src/tests/listen.sh" # listen_free_port
wait_pong() { for _ in $(seq 500); do [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0; sleep 0.01; done; return 1; }

rport=$(listen_free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$dir" > "$dir/redis.log" 2>&1 &
pids+=($!)
php -n -d "extension=$ext" -d "ephpm.kv_backend=shm://$seg" -r 'ephpm_kv_set("bench:made", "1");'
eport=$(listen_free_port)
"$ephpm" --segment "$seg" serve --listen "127.0.0.1:$eport" --no-auth ${RESP_SERVE_ARGS:-} 2> "$dir/ephpm.log" &
pids+=($!)
wait_pong "$rport" && wait_pong "$eport" || { cat "$dir"/*.log; exit 1; }

echo "date:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) vCPUs)"
echo "server: $(redis-server --version | cut -d' ' -f1-3); ephpm serve on segment $seg (GOMAXPROCS ${GOMAXPROCS:-default})"
echo "bench:  redis-benchmark $args"
echo
printf '%-6s %-14s %14s %14s\n' run server "SET req/s" "GET req/s"
# rps TEXT TEST: the requests per second redis-benchmark -q printed for TEST.
rps() { grep -m1 -E "^$2: [0-9.]+ requests per second" <<< "$1" | sed -E 's/.*: ([0-9.]+) requests per second.*/\1/'; }
declare -A sum
for ((r = 1; r <= rounds; r++)); do
  for side in redis-server ephpm; do
    port=$rport
    [ "$side" = ephpm ] && port=$eport
    # shellcheck disable=SC2086
    out=$(redis-benchmark -p "$port" $args 2>&1 | tr '\r' '\n')
    set_rps=$(rps "$out" SET) get_rps=$(rps "$out" GET)
    printf '%-6s %-14s %14s %14s\n' "$r" "$side" "$set_rps" "$get_rps"
    sum[$side.set]=$(awk -v a="${sum[$side.set]:-0}" -v b="$set_rps" 'BEGIN { print a + b }')
    sum[$side.get]=$(awk -v a="${sum[$side.get]:-0}" -v b="$get_rps" 'BEGIN { print a + b }')
  done
done
for side in redis-server ephpm; do
  printf '%-6s %-14s %14.0f %14.0f\n' mean "$side" "$(awk -v s="${sum[$side.set]}" -v n="$rounds" 'BEGIN { print s / n }')" \
    "$(awk -v s="${sum[$side.get]}" -v n="$rounds" 'BEGIN { print s / n }')"
done
