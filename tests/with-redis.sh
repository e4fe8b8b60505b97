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

free_port() { php -n -r '$s = stream_socket_server("tcp://127.0.0.1:0"); echo substr(strrchr(stream_socket_get_name($s, false), ":"), 1);'; }

start_redis() { # start_redis PORT [EXTRA CONFIG...]
  local port=$1 conf="$dir/$1.conf"
  shift
  printf 'bind 127.0.0.1\nport %s\ndir %s\nsave ""\nappendonly no\ndbfilename dump-%s.rdb\n' "$port" "$dir" "$port" > "$conf"
  for line in "$@"; do echo "$line" >> "$conf"; done
  "$server" "$conf" > "$dir/$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    "$cli" -p "$port" ping > /dev/null 2>&1 && return 0
    sleep 0.05
  done
  cat "$dir/$port.log"
  echo "$server on port $port did not start" >&2
  exit 1
}

case $mode in
  standalone)
    port=$(free_port)
    start_redis "$port"
    backend="redis://127.0.0.1:$port"
    ;;
  cluster)
    ports=()
    for _ in 1 2 3; do
      port=$(free_port)
      start_redis "$port" "cluster-enabled yes" "cluster-config-file nodes-$port.conf" "cluster-node-timeout 5000"
      ports+=("$port")
    done
    "$cli" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes > "$dir/create.log" 2>&1 \
      || { cat "$dir/create.log"; exit 1; }
    # Every node must see the cluster up: ephpm does not retry a
    # CLUSTERDOWN (it retries nothing), so a node still catching up fails
    # the first test that lands on it.
    for port in "${ports[@]}"; do
      for _ in $(seq 100); do
        "$cli" -p "$port" cluster info | grep -q 'cluster_state:ok' && break
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
