#!/usr/bin/env bash
# php -S with PHP_CLI_SERVER_WORKERS forks its workers from a master that
# loaded the extension: the master must start no Go runtime before it forks,
# and each process (the master serves requests too, after forking) must
# load its own and keep working under GC-heavy load (large values, waits
# backed by goroutines and timers), with no hang. With no ephpm.* setting
# they share the server's shared-memory segment (and none warns that its
# store is private); the segment goes once the server has ended.
#
# Usage: cli_server_workers.sh /path/to/ephpm.so
set -euo pipefail
ext=$1
dir=$(mktemp -d)
pid=
cleanup() {
  # The master does not pass SIGTERM on to its workers: stop each by PID.
  if [ -n "$pid" ]; then
    workers=$(pgrep -P "$pid" || true)
    kill $workers "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

cat > "$dir/load.php" <<'PHP'
<?php
// Large values churn the Go heap; a lock held by this request and a wait
// on it put goroutines and timers to work; then report.
$me = getmypid();
for ($i = 0; $i < 50; $i++) {
    ephpm_kv_set("big:$me:" . ($i % 5), random_bytes(1 << 18));
}
$token = ephpm_kv_lock("lock:$me", 600);       // held past the next call, however slow the host
$again = ephpm_kv_lock("lock:$me", 600, 0.05); // waits 50 ms on itself, then false
ephpm_kv_unlock("lock:$me", $token);
ephpm_kv_incr('served', 1);
echo $me, ' ', count(glob('/proc/self/task/*')), ' ', $token !== false && $again === false ? 'ok' : 'BAD', ' ',
     ephpm_kv_stats()['backend'];
PHP
cat > "$dir/count.php" <<'PHP'
<?php
echo ephpm_kv_incr('served', 1);
PHP

. "$(dirname "$0")/../listen.sh"
server_start() {
  PHP_CLI_SERVER_WORKERS=4 php -n -d "extension=$ext" -S "127.0.0.1:$1" -t "$dir" > "$dir/server.log" 2>&1 &
  listen_pid=$!
}
server_ready() { curl -s -o /dev/null "http://127.0.0.1:$1/"; }
listen_start server_start server_ready || { cat "$dir/server.log"; exit 1; }
pid=$listen_pid

passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }

check "master has one thread after forking" '[ "$(ls /proc/$pid/task | wc -l)" = 1 ]'
check "master has not mapped libephpm.so" '! grep -q libephpm /proc/$pid/maps'

# 40 requests, 8 at a time, each bounded to 300 s: a hang fails the test
# (the bound is a hang catch, not a speed bound).
seq 40 | xargs -P 8 -I{} curl -s --max-time 300 "http://127.0.0.1:$port/load.php?{}" -o "$dir/out.{}" || true
ok=0 workers="" warned="" backends=""
for i in $(seq 40); do
  read -r wpid threads verdict backend < <(tail -n 1 "$dir/out.$i" 2>/dev/null) || true
  if [ "${verdict:-}" = ok ] && [ "${threads:-0}" -gt 1 ]; then
    ok=$((ok + 1)); workers="$workers $wpid"; backends="$backends ${backend:-?}"
  fi
  if grep -q 'store is private' "$dir/out.$i" 2>/dev/null; then
    warned="$warned ${wpid:-?}"
  fi
done
check "all 40 requests answered ok by workers running Go (got $ok)" '[ "$ok" = 40 ]'
nworkers=$(tr ' ' '\n' <<< "$workers" | sort -u | grep -c . || true)
check "requests were spread over several processes ($nworkers)" '[ "$nworkers" -gt 1 ]'
check "every process served the shared-memory segment ($(tr ' ' '\n' <<< "$backends" | sort | uniq -c | xargs))" \
  '[ -z "$(tr " " "\n" <<< "$backends" | grep . | grep -vx shm)" ]'
check "no process warned that its store is private ($warned)" '[ -z "$warned" ]'
segment=/dev/shm/ephpm-cli-server-127.0.0.1_$port.$(id -u)
served=$(curl -s "http://127.0.0.1:$port/count.php")
check "the processes counted into one store ($served of 41)" '[ "$served" = 41 ]'
check "the segment is $segment" '[ -f "$segment" ]'
workers=$(pgrep -P "$pid" || true)
kill $workers "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
for _ in $(seq 1200); do gone=1; for w in $workers; do kill -0 "$w" 2>/dev/null && gone=; done; [ -n "$gone" ] && break; sleep 0.05; done
check "the server's processes ended" '[ -n "$gone" ]'
php -n -d "extension=$ext" -d "ephpm.kv_backend=shm://clisw-$$" -r 'ephpm_kv_stats();'
rm -f "/dev/shm/ephpm-clisw-$$.$(id -u)"
check "once the server ended, the next process to open a segment removed it" '[ ! -e "$segment" ]'
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
