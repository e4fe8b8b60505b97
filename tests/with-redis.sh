#!/usr/bin/env bash
# Runs a command with Redis servers of its own on 127.0.0.1, and stops them
# by PID afterwards. The backend URL is in $EPHPM_TEST_BACKEND, and any
# argument "@BACKEND@" of the command is replaced by it.
#
# Usage: with-redis.sh standalone|cluster COMMAND [ARG...]
#   standalone  one redis-server
#   cluster     three masters joined into a Redis Cluster
# The server is $EPHPM_REDIS_SERVER (for example valkey-server) with its
# client $EPHPM_REDIS_CLI, else redis-server and redis-cli.
set -euo pipefail
server=${EPHPM_REDIS_SERVER:-redis-server}
cli=${EPHPM_REDIS_CLI:-redis-cli}
mode=$1
shift
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

. "$(dirname "$0")/listen.sh"

# redis_start PORT starts a server with $extra_config (lines, @PORT@ being
# the port); redis_ready PORT succeeds once the server answering on PORT is
# that one (its INFO's process id): another process's server may hold a
# port found free, and the one started here, unable to bind it, may take
# a while to exit on a loaded host.
extra_config=()
redis_start() {
  local conf="$dir/$1.conf"
  printf 'bind 127.0.0.1\nport %s\ndir %s\nsave ""\nappendonly no\ndbfilename dump-%s.rdb\n' "$1" "$dir" "$1" > "$conf"
  for line in "${extra_config[@]}"; do echo "${line//@PORT@/$1}" >> "$conf"; done
  "$server" "$conf" > "$dir/$1.log" 2>&1 &
  listen_pid=$!
}
redis_ready() {
  [ "$("$cli" -p "$1" INFO server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$listen_pid" ]
}

# start_redis [EXTRA CONFIG...] starts a server and sets $port to its port.
start_redis() {
  extra_config=("$@")
  listen_start redis_start redis_ready || exit 1
  pids+=("$listen_pid")
}

case $mode in
  standalone)
    start_redis
    backend="redis://127.0.0.1:$port"
    ;;
  cluster)
    ports=()
    # A node that has not answered its peers for cluster-node-timeout is
    # failed, and with no replica the cluster is down: 60 s, so that a node
    # a loaded host did not run for a few seconds is not (nothing here
    # fails a node on purpose).
    for _ in 1 2 3; do
      start_redis "cluster-enabled yes" "cluster-config-file nodes-@PORT@.conf" "cluster-node-timeout 60000"
      ports+=("$port")
    done
    "$cli" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes > "$dir/create.log" 2>&1 \
      || { cat "$dir/create.log"; exit 1; }
    # Every node must see the cluster up: ephpm does not retry a
    # CLUSTERDOWN (it retries nothing), so a node still catching up fails
    # the first test that lands on it.
    # The wait is a 60 s hang catch.
    for port in "${ports[@]}"; do
      deadline=$((SECONDS + 60))
      until "$cli" -p "$port" cluster info | grep -q 'cluster_state:ok'; do
        ((SECONDS < deadline)) || { echo "cluster node $port not up within 60 s" >&2; exit 1; }
        sleep 0.1
      done
    done
    backend="redis+cluster://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
    ;;
  *)
    echo "usage: $0 standalone|cluster COMMAND..." >&2
    exit 2
    ;;
esac

export EPHPM_TEST_BACKEND=$backend
args=()
for a in "$@"; do args+=("${a//@BACKEND@/$backend}"); done
"${args[@]}"
