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

# A holds the lock and keeps running (600 s and 900 s, beyond the waiters
# below however slow the host: hang catches, as are the polls' 60 s).
(php_run '$t = ephpm_kv_lock("sig:lock", 600); file_put_contents("php://stdout", $t . "\n"); sleep(900);') > /tmp/ephpm-sig-holder.$$ &
holder=$!
for _ in $(seq 1200); do [ -s /tmp/ephpm-sig-holder.$$ ] && break; sleep 0.05; done
token=$(cat /tmp/ephpm-sig-holder.$$)
check "the holder got a token" '[ -n "$token" ]'

for sig in TERM INT; do
  (php_run 'ephpm_kv_lock("sig:lock", 30, 600.0); echo "acquired\n";') > /tmp/ephpm-sig-waiter.$$ 2>&1 &
  waiter=$!
  sleep 0.5
  check "SIG$sig: the waiter is still waiting" 'kill -0 $waiter 2>/dev/null'
  start=$(now_ms)
  kill -"$sig" "$waiter"
  wait "$waiter" 2>/dev/null || true
  took=$(( $(now_ms) - start ))
  # Ended by the signal, not by its 600 s wait or the holder's 600 s TTL
  # (how soon the host ran the exit is not asserted: 300 s is a hang catch;
  # "never acquired" below).
  check "SIG$sig: the waiter ended in ${took} ms" '[ "$took" -lt 300000 ]'
  check "SIG$sig: the waiter never acquired" '! grep -q acquired /tmp/ephpm-sig-waiter.$$'
  check "SIG$sig: the holder's lock is untouched" '[ "$(redis-cli -p $port get sig:lock)" = "$token" ]'
done

kill -KILL "$holder"
wait "$holder" 2>/dev/null || true

# A holder killed outright, holding a lock with a 10 s TTL: the TTL ends it.
# It is there after the kill unless the host took the whole TTL to get
# there (then it may have lapsed: the time is measured, not bounded).
started=$(now_ms)
(php_run 'ephpm_kv_lock("sig:short", 10); echo "held\n"; sleep(900);') > /tmp/ephpm-sig-holder.$$ &
holder=$!
for _ in $(seq 1200); do grep -q held /tmp/ephpm-sig-holder.$$ 2>/dev/null && break; sleep 0.05; done
kill -KILL "$holder"
wait "$holder" 2>/dev/null || true
ttl=$(redis-cli -p "$port" pttl sig:short)
check "after SIGKILL the lock is still there with its TTL ($ttl ms)" \
  '{ [ "$ttl" -gt 0 ] && [ "$ttl" -le 10000 ]; } || { [ "$ttl" = -2 ] && [ $(( $(now_ms) - started )) -ge 9900 ]; }'
[ "$ttl" -gt 0 ] || ttl=0
sleep "$(awk "BEGIN { print ($ttl + 200) / 1000 }")"
check "the TTL ended it" '[ "$(redis-cli -p $port exists sig:short)" = 0 ]'
check "and the next process takes it at once" '[ "$( (php_run '"'"'echo ephpm_kv_lock("sig:short", 3) !== false ? "yes" : "no";'"'"') )" = yes ]'

rm -f /tmp/ephpm-sig-holder.$$ /tmp/ephpm-sig-waiter.$$
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
