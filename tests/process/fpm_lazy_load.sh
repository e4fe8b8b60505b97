#!/usr/bin/env bash
# php-fpm loads the extension in its master, which then forks the workers.
# The master must start no Go runtime (one thread, libephpm.so not even
# mapped); each worker loads the library on its first ephpm call and works,
# and, with ephpm.kv_backend=memory set, says once that its in-process store
# is private to it. (With the default, the pool's workers share a segment:
# ctest fpm-shared, integration/fpm_race_test.go.)
#
# Usage: fpm_lazy_load.sh /usr/sbin/php-fpm8.2 /path/to/ephpm.so
set -euo pipefail
fpm=$1 ext=$2
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

cat > "$dir/fpm.conf" <<CONF
[global]
error_log = $dir/fpm.log
daemonize = no
[www]
listen = $dir/fpm.sock
pm = static
pm.max_children = 2
CONF
cat > "$dir/worker.php" <<'PHP'
<?php
ephpm_kv_set('fpm:k', 'v' . getmypid());
printf("%d %d %s", getmypid(), count(glob('/proc/self/task/*')), ephpm_kv_get('fpm:k'));
PHP

root_flag=()
[ "$(id -u)" = 0 ] && root_flag=(-R)
"$fpm" -n -F "${root_flag[@]}" -y "$dir/fpm.conf" -d "extension=$ext" -d ephpm.kv_backend=memory &
pid=$!
# Every wait below is a hang catch of a minute (or 300 s a request), not a
# speed bound.
for _ in $(seq 600); do [ -S "$dir/fpm.sock" ] && break; sleep 0.1; done
[ -S "$dir/fpm.sock" ] || { cat "$dir/fpm.log"; echo "php-fpm did not start"; exit 1; }

passed=0 failed=0
check() { # check DESCRIPTION CONDITION (a shell expression)
  if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi
}
threads() { ls "/proc/$1/task" | wc -l; }
maps_lib() { grep -q libephpm "/proc/$1/maps"; }

check "master has one thread before any request" '[ "$(threads "$pid")" = 1 ]'
check "master has not mapped libephpm.so" '! maps_lib "$pid"'

request() {
  SCRIPT_FILENAME="$dir/worker.php" REQUEST_METHOD=GET \
    timeout 300 cgi-fcgi -bind -connect "$dir/fpm.sock" | sed -n '/^\r\?$/,$p' | tail -n +2
}
declare -A seen
for i in 1 2 3 4 5 6; do
  body=$(request)
  read -r wpid wthreads value < <(tail -n 1 <<< "$body") || true
  warnings=$(grep -c 'store is private to this php-fpm worker' <<< "$body" || true)
  if [ -z "${seen[${wpid:-none}]:-}" ]; then
    check "request $i: worker ${wpid:-?} warns once, on its first use, that its store is private" '[ "$warnings" = 1 ]'
    seen[${wpid:-none}]=1
  else
    check "request $i: worker ${wpid:-?} does not warn again" '[ "$warnings" = 0 ]'
  fi
  check "request $i answered by a worker" '[ -n "${wpid:-}" ] && [ "$wpid" != "$pid" ]'
  check "request $i: worker ${wpid:-?} runs Go (threads: ${wthreads:-?})" '[ "${wthreads:-0}" -gt 1 ]'
  check "request $i: the worker's own store answered" '[ "${value:-}" = "v$wpid" ]'
done

check "master still has one thread" '[ "$(threads "$pid")" = 1 ]'
check "master still has not mapped libephpm.so" '! maps_lib "$pid"'

# php-fpm's own signals still reach workers that run Go (whose threads
# block every asynchronous signal): a graceful reload (SIGUSR2) replaces
# them, and SIGTERM ends master and workers.
gone() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
old_workers=("${!seen[@]}")
kill -USR2 "$pid"
for _ in $(seq 1200); do gone "${old_workers[@]}" && break; sleep 0.05; done
check "SIGUSR2: the workers that ran Go ended (${old_workers[*]})" 'gone "${old_workers[@]}"'
for _ in $(seq 1200); do [ -S "$dir/fpm.sock" ] && break; sleep 0.05; done
read -r wpid _ value < <(request | tail -n 1) || true
check "after the reload a new worker answers (${wpid:-?})" '[ -n "${wpid:-}" ] && [ -z "${seen[$wpid]:-}" ] && [ "${value:-}" = "v$wpid" ]'
workers=$(pgrep -P "$pid" || true)
kill -TERM "$pid"
for _ in $(seq 1200); do gone "$pid" $workers && break; sleep 0.05; done
check "SIGTERM: master and workers ended" 'gone "$pid" $workers'
wait "$pid" 2>/dev/null || true
pid=
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
