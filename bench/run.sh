#!/usr/bin/env bash
# Benchmarks, one command: builds, installs the peers (APCu, phpredis,
# php-memcached, redis-server, memcached) if missing, starts the servers on
# 127.0.0.1, runs the PHP-level comparison and the Go benchmarks, and stops
# the servers by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo
. scripts/go-env.sh

# Figures are only worth having from an optimised build: setup.sh builds
# RelWithDebInfo (-O2 -g). Say what build/ holds, and refuse an
# unoptimised one. (The Go library is optimised by go build itself.)
ext_flags=$(sed -n 's/^C_FLAGS = //p' build/CMakeFiles/ephpm.dir/flags.make)
echo "== Build: CMAKE_BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' build/CMakeCache.txt), ephpm.so compiled with$(grep -o -- ' -O[0-3s]\| -g\b\| -DNDEBUG' <<< " $ext_flags" | tr -d '\n')"
grep -q -- ' -O[1-3s]' <<< " $ext_flags" || { echo "bench: build/ is not optimised ($ext_flags)" >&2; exit 1; }

peers=(php8.2-apcu php8.2-redis php8.2-memcached php8.2-fpm redis-server memcached)
missing=()
for p in "${peers[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

. tests/listen.sh # listen_free_port
pids=() hogs=()
trap 'for p in "${pids[@]}" "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
redis_port=$(listen_free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no >/dev/null &
pids+=($!)
mc_port=$(listen_free_port)
mc_user=(); [ "$(id -u)" = 0 ] && mc_user=(-u root)  # memcached refuses to run as root without -u
memcached -l 127.0.0.1 -p "$mc_port" -U 0 "${mc_user[@]}" >/dev/null &
pids+=($!)
sleep 0.5

echo "== PHP level (ns per operation: best of 7 alternating rounds; network peers: best of 3)"
php -d "extension=$PWD/build/modules/ephpm.so" -d apc.enable_cli=1 -d apc.shm_size=256M \
    -d ephpm.kv_memory_limit=256M bench/php/kv_bench.php "$redis_port" "$mc_port"

echo
echo "== Batches: 100 keys of 64 B against APCu's array forms (ns per key: best of 7 alternating rounds)"
php -d "extension=$PWD/build/modules/ephpm.so" -d apc.enable_cli=1 -d apc.shm_size=256M \
    -d ephpm.kv_memory_limit=256M bench/php/batch_bench.php
echo
echo "== Shared-memory backend against APCu: one process (ns per operation, best of 7), then 8 processes at once"
grep -m1 'model name' /proc/cpuinfo || true
shm_name="bench-$$"
php -d "extension=$PWD/build/modules/ephpm.so" -d apc.enable_cli=1 -d apc.shm_size=256M \
    -d "ephpm.kv_backend=shm://$shm_name" -d ephpm.kv_memory_limit=256M bench/php/shm_bench.php 8 2 5
rm -f "/dev/shm/ephpm-$shm_name.$(id -u)" "/dev/shm/ephpm-$shm_name.$(id -u).fences1"
echo
echo "== Shared-memory backend: lock hand-off between 8 processes"
go run ./bench/shmhandoff
echo
echo "== Shared-memory backend: 60 s of churn at 90 % full, 64 B-64 KiB values"
go test -run XXX -bench Churn90 -benchtime 60s ./shm

echo
echo "== Redis backend: ephpm against phpredis on the same server (us per operation: median of 25 alternating rounds)"
php -d "extension=$PWD/build/modules/ephpm.so" -d "ephpm.kv_backend=redis://127.0.0.1:$redis_port" \
    -d ephpm.kv_near_cache_prefixes=near: bench/php/redis_bench.php "$redis_port"
php -d "extension=$PWD/build/modules/ephpm.so" -d "ephpm.kv_backend=redis://127.0.0.1:$redis_port" \
    bench/php/redis_batch_bench.php

echo
# An idle virtual CPU takes tens of microseconds to wake, and that hides
# what each client itself costs per call. A niced busy loop per core keeps
# the CPUs awake (and yields to everything else).
echo "== Redis backend, CPUs kept awake by a niced busy loop per core (same measure)"
for _ in $(seq "$(nproc)"); do nice -n 19 sh -c 'while :; do :; done' & hogs+=($!); done
php -d "extension=$PWD/build/modules/ephpm.so" -d "ephpm.kv_backend=redis://127.0.0.1:$redis_port" \
    -d ephpm.kv_near_cache_prefixes=near: bench/php/redis_bench.php "$redis_port"
kill "${hogs[@]}"
hogs=()  # reaped: their PIDs may be reused by the time the EXIT trap runs

echo
echo "== Sessions: 100 concurrent requests on one session, php-fpm with 8 workers, 1 ms and 5 ms of work"
go run ./bench/sessions -ext build/modules/ephpm.so -hold-us 1000,5000

echo
echo "== php-fpm, no ephpm.* setting and on Redis: 20 and 64 workers at a barrier, 200 rounds, one winner each"
EPHPM_SO="$PWD/build/modules/ephpm.so" EPHPM_RACE_ROUNDS=200 \
  go test -count=1 -run TestFPMWorkersRacingForALockHaveOneWinner -v ./integration | grep -E -- '--- |^ok|FAIL'

echo
echo "== Soak: 5 M mixed operations under a 32 MiB limit (RSS must stay flat)"
php -n -d "extension=$PWD/build/modules/ephpm.so" -d ephpm.kv_memory_limit=32M \
    -d ephpm.kv_eviction=allkeys-lru bench/php/soak.php

echo
echo "== Lock hand-off (Go)"
go run ./bench/handoff

echo
echo "== Redis backend in Go: the direct path against go-redis (user-ns/op is the client's own CPU)"
go test -run XXX -bench Commands -benchtime 20000x ./redisstore | grep -E '^Benchmark'

echo
echo "== Go level (go test -bench, GOMAXPROCS 1 and 2)"
go test -run XXX -bench . -cpu 1,2 ./memstore | grep -E '^Benchmark'
