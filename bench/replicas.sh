#!/usr/bin/env bash
# What wait_replicas costs (issue 29): a master and a replica on loopback,
# started here on free ports and stopped by PID; bench/php/replicas_bench.php
# run ROUNDS times with ephpm not waiting and waiting for the replica
# (wait_replicas=1), in turn, each run beside phpredis without and with
# WAIT 1 on the same master. Prints the CPU, the date and each run's line.
#
# Usage: bench/replicas.sh [ROUNDS]   (after scripts/setup.sh test; default 3)
#   SERVER="bench/chroot-server.sh valkey-server" bench/replicas.sh: on
#   Valkey (the test matrix's chroot), or any command that runs a server.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
read -r -a server <<< "${SERVER:-redis-server}"
ext=$src/build/modules/ephpm.so
[ -f "$ext" ] || { echo "build first: scripts/setup.sh test"; exit 1; }
php -r 'exit(class_exists("Redis") ? 0 : 1);' || { echo "phpredis is not installed (php-redis)"; exit 1; }
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
. "$src/tests/listen.sh" # listen_free_port
wait_pong() { for _ in $(seq 500); do [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0; sleep 0.01; done; return 1; }

mport=$(listen_free_port)
mkdir "$dir/m" "$dir/r"
"${server[@]}" --bind 127.0.0.1 --port "$mport" --save '' --appendonly no --dir "$dir/m" > "$dir/m.log" 2>&1 &
pids+=($!)
wait_pong "$mport" || { cat "$dir"/*.log; exit 1; }
rport=$(listen_free_port)
"${server[@]}" --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$dir/r" --replicaof 127.0.0.1 "$mport" > "$dir/r.log" 2>&1 &
pids+=($!)
wait_pong "$rport" || { cat "$dir"/*.log; exit 1; }
for _ in $(seq 1000); do redis-cli -p "$mport" INFO replication | grep -q 'state=online' && break; sleep 0.01; done

echo "date:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "server: $(redis-cli -p "$mport" INFO server | grep -E '^(redis|valkey)_version' | tr -d '\r' | tr '\n' ' ')"
url=redis://127.0.0.1:$mport
for r in $(seq "$rounds"); do
  for mode in nowait wait; do
    backend=$url
    [ "$mode" = wait ] && backend="$url?wait_replicas=1"
    printf '%-7s round %d: ' "$mode" "$r"
    php -d "extension=$ext" -d "ephpm.kv_backend=\"$backend\"" "$src/bench/php/replicas_bench.php" "$mport"
  done
done
