#!/usr/bin/env bash
# A PHP process blocked in a lock wait (inside Go) ends promptly on SIGTERM
# and SIGINT, and disturbs no other process; a holder killed outright
# leaves a lock that its TTL ends. Run under tests/with-redis.sh, which
# provides $EPHPM_TEST_BACKEND.
#
# Usage: with-redis.sh standalone signals.sh /path/to/ephpm.so
set -euo pipefail
set -m # job control: background jobs get SIGINT, which is ignored for them otherwise
ext=$1
backend=${EPHPM_TEST_BACKEND:?run me under tests/with-redis.sh}
port=${backend##*:}
# exec: a background job's $! must be PHP itself, not a subshell around it.
php_run() { exec php -n -d "extension=$ext" -d "ephpm.kv_backend=$backend" -r "$1"; }
now_ms() { date +%s%3N; }

passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }

# A holds the lock (TTL 20 s) and keeps running.
(php_run '$t = ephpm_kv_lock("sig:lock", 20); file_put_contents("php://stdout", $t . "\n"); sleep(30);') > /tmp/ephpm-sig-holder.$$ &
holder=$!
for _ in $(seq 100); do [ -s /tmp/ephpm-sig-holder.$$ ] && break; sleep 0.05; done
token=$(cat /tmp/ephpm-sig-holder.$$)
check "the holder got a token" '[ -n "$token" ]'

for sig in TERM INT; do
  (php_run 'ephpm_kv_lock("sig:lock", 30, 60.0); echo "acquired\n";') > /tmp/ephpm-sig-waiter.$$ 2>&1 &
  waiter=$!
  sleep 0.5
  check "SIG$sig: the waiter is still waiting" 'kill -0 $waiter 2>/dev/null'
  start=$(now_ms)
  kill -"$sig" "$waiter"
  wait "$waiter" 2>/dev/null || true
  took=$(( $(now_ms) - start ))
  # Ended by the signal, not by its 60 s wait or the holder's 20 s TTL (how
  # soon the host ran the exit is not asserted; "never acquired" below).
  check "SIG$sig: the waiter ended in ${took} ms" '[ "$took" -lt 10000 ]'
  check "SIG$sig: the waiter never acquired" '! grep -q acquired /tmp/ephpm-sig-waiter.$$'
  check "SIG$sig: the holder's lock is untouched" '[ "$(redis-cli -p $port get sig:lock)" = "$token" ]'
done

kill -KILL "$holder"
wait "$holder" 2>/dev/null || true

# A holder killed outright, holding a lock with a 2 s TTL: the TTL ends it.
(php_run 'ephpm_kv_lock("sig:short", 2); echo "held\n"; sleep(30);') > /tmp/ephpm-sig-holder.$$ &
holder=$!
for _ in $(seq 100); do grep -q held /tmp/ephpm-sig-holder.$$ 2>/dev/null && break; sleep 0.05; done
kill -KILL "$holder"
wait "$holder" 2>/dev/null || true
ttl=$(redis-cli -p "$port" pttl sig:short)
check "after SIGKILL the lock is still there with its TTL ($ttl ms)" '[ "$ttl" -gt 0 ] && [ "$ttl" -le 2000 ]'
sleep "$(awk "BEGIN { print ($ttl + 200) / 1000 }")"
check "the TTL ended it" '[ "$(redis-cli -p $port exists sig:short)" = 0 ]'
check "and the next process takes it at once" '[ "$( (php_run '"'"'echo ephpm_kv_lock("sig:short", 3) !== false ? "yes" : "no";'"'"') )" = yes ]'

rm -f /tmp/ephpm-sig-holder.$$ /tmp/ephpm-sig-waiter.$$
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
