#!/usr/bin/env bash
# The ephpm command and its RESP endpoint against a php-fpm pool's own
# segment, while php-fpm works on it:
#   - php-fpm (a config and a pool of its own, so a default segment name of
#     its own) makes the pool's segment; `ephpm serve` serves that segment
#     on a free loopback port with a password (it refuses to serve TCP
#     without one unless told --no-auth), and on a Unix socket of mode
#     0600 with none;
#   - redis-cli and python3-redis each SET/GET/SETNX/DELIFEQ/SET IFEQ/SCAN/
#     INFO and an unknown command, and see what PHP wrote and the reverse;
#   - the race: N php-fpm requests and N Python clients (each a process
#     with its connection) meet at a barrier (a store counter each
#     increments, and a key the test sets once all 2N have) and try to take
#     one lock (ephpm_kv_setnx vs SETNX), for R rounds: exactly one winner
#     per round across both sides;
#   - a session lock held by a worker shows in `ephpm locks` with its pid;
#     `ephpm stats/locks/keys/get/del/check/flush` with and without --json.
# Every wait is a bounded poll; nothing is timed.
#
# Usage: cli_resp.sh /usr/sbin/php-fpm8.2 /path/to/ephpm.so /path/to/ephpm
set -euo pipefail
fpm=$1 ext=$2 ephpm=$3
python=/usr/bin/python3
N=${CLI_RESP_N:-6} R=${CLI_RESP_ROUNDS:-40}
dir=$(mktemp -d)
pool="clitest$$"
uid=$(id -u)
# The pool's segment files, as the command names them (the rule is shm.PathOf's).
mapfile -t seg_files < <("$ephpm" --pool "$pool" path)
seg=${seg_files[0]:-}
[ "${#seg_files[@]}" = 2 ] && [[ "$seg" == /dev/shm/* ]] || { echo "ephpm path: ${seg_files[*]}"; rm -rf "$dir"; exit 1; }
fpm_pid= serve_pid= unix_pid=
bg=()
cleanup() {
  for p in $serve_pid $unix_pid $fpm_pid "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in $serve_pid $unix_pid $fpm_pid "${bg[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -f "${seg_files[@]}"
  rm -rf "$dir"
}
trap cleanup EXIT

$python -c 'import redis' 2>/dev/null || { echo "python3-redis is not installed (scripts/setup.sh test installs it)"; exit 1; }

passed=0 failed=0
check() { # check DESCRIPTION CONDITION (a shell expression)
  if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi
}
# poll TRIES CONDITION: true once CONDITION holds, looking every 10 ms; the
# tries are a hang catch (6000: a minute or more), not a speed bound.
poll() {
  local i
  for ((i = 0; i < $1; i++)); do eval "$2" && return 0; sleep 0.01; done
  return 1
}

cat > "$dir/fpm.conf" <<CONF
[global]
error_log = $dir/fpm.log
daemonize = no
[$pool]
listen = $dir/fpm.sock
pm = static
pm.max_children = $((N + 3))
CONF
root_flag=()
[ "$uid" = 0 ] && root_flag=(-R)
# The session lock's 600 s outlive the checks made while a worker holds it.
"$fpm" -n -F "${root_flag[@]}" -y "$dir/fpm.conf" -d "extension=$ext" -d max_execution_time=0 \
  -d session.save_handler=ephpm -d session.use_strict_mode=0 -d session.use_cookies=0 -d session.cache_limiter= \
  -d ephpm.session_lock_ttl=600 &
fpm_pid=$!
poll 6000 '[ -S "$dir/fpm.sock" ]' || { cat "$dir/fpm.log"; echo "php-fpm did not start"; exit 1; }

# request SCRIPT [QUERY]: the body of a php-fpm request. Its 900 s bound is
# a hang catch: the race's requests run 40 rounds, minutes on a loaded host.
request() {
  SCRIPT_FILENAME="$dir/$1" QUERY_STRING="${2:-}" REQUEST_METHOD=GET \
    timeout 900 cgi-fcgi -bind -connect "$dir/fpm.sock" | sed -n '/^\r\?$/,$p' | tail -n +2
}
cat > "$dir/hello.php" <<'PHP'
<?php
ephpm_kv_set('fpm:hello', (string) getmypid());
echo getmypid(), ' ', ephpm_kv_stats()['backend'];
PHP
cat > "$dir/kv.php" <<'PHP'
<?php
switch ($_GET['op']) {
case 'get': var_export(ephpm_kv_get($_GET['k'])); break;
case 'setnx': var_export(ephpm_kv_setnx($_GET['k'], 'php', 3600)); break;
case 'set': var_export(ephpm_kv_set($_GET['k'], $_GET['v'])); break;
}
PHP
parse() { php -n -r 'parse_str($argv[1], $q); echo http_build_query($q);' "$1"; }
read -r worker backend < <(request hello.php) || true
check "a php-fpm worker answered on the pool's segment ($backend)" '[ "${backend:-}" = shm ] && [ -f "$seg" ]'

. "$(dirname "$0")/listen.sh"
port=$(listen_free_port)
out=$(EPHPM_REQUIREPASS= "$ephpm" --pool "$pool" serve --listen "127.0.0.1:$port" 2>&1) && status=0 || status=$?
check "serve refuses TCP with no password unless --no-auth ($status)" '[ "$status" = 1 ] && grep -q -- "--no-auth" <<< "$out"'
pass="pw-$$-$RANDOM"
printf '%s\n' "$pass" > "$dir/pass"
export REDISCLI_AUTH=$pass
rc() { redis-cli -p "$port" "$@"; }
noauth() { env -u REDISCLI_AUTH redis-cli "$@"; } # a client that gives no password
serve_start() {
  "$ephpm" --pool "$pool" serve --listen "127.0.0.1:$1" --requirepass-file "$dir/pass" 2> "$dir/serve.log" &
  listen_pid=$!
}
serve_ready() { [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ]; }
listen_start serve_start serve_ready || { cat "$dir/serve.log"; echo "ephpm serve did not answer"; exit 1; }
serve_pid=$listen_pid
check "serve says what it serves, on loopback" 'grep -q "serving segment fpm-$pool" "$dir/serve.log"'
check "without the password, every command is refused" '[ "$(noauth -p "$port" GET fpm:hello 2>&1)" = "NOAUTH Authentication required." ]'
out=$(noauth -p "$port" MSET a 1 b 2 c 3 d 4 e 5 f 6 2>&1 || true)
check "without the password, Redis's limit of 10 arguments ($out)" 'grep -q "Protocol error: unauthenticated multibulk length" <<< "$out"'
"$ephpm" --pool "$pool" serve --unix "$dir/ephpm.sock" 2> "$dir/serve-unix.log" &
unix_pid=$!
poll 6000 '[ "$(noauth -s "$dir/ephpm.sock" PING 2>/dev/null)" = PONG ]' || { cat "$dir/serve-unix.log"; echo "ephpm serve --unix did not answer"; exit 1; }
check "the Unix socket is mode 0600, the segment's user's, and needs no password" \
  '[ "$(stat -c "%a %u" "$dir/ephpm.sock")" = "600 $uid" ] && [ "$(noauth -s "$dir/ephpm.sock" GET fpm:hello)" = "$worker" ]'
kill "$unix_pid"; wait "$unix_pid" 2>/dev/null || true; unix_pid=

# --- redis-cli ---------------------------------------------------------------
check "redis-cli GET reads what PHP wrote" '[ "$(rc GET fpm:hello)" = "$worker" ]'
check "redis-cli SET" '[ "$(rc SET cli:k value1)" = OK ]'
check "PHP reads what redis-cli SET" '[ "$(request kv.php "op=get&k=cli:k")" = "'"'"'value1'"'"'" ]'
check "redis-cli SETNX takes a free lock" '[ "$(rc SETNX lock:a t1)" = 1 ]'
check "redis-cli SETNX of a held lock" '[ "$(rc SETNX lock:a t2)" = 0 ]'
check "PHP ephpm_kv_setnx sees the lock redis-cli took" '[ "$(request kv.php "op=setnx&k=lock:a")" = false ]'
check "DELIFEQ with another token keeps the lock" '[ "$(rc DELIFEQ lock:a t2)" = 0 ]'
check "DELIFEQ with the holder's token releases it" '[ "$(rc DELIFEQ lock:a t1)" = 1 ]'
check "PHP takes the released lock" '[ "$(request kv.php "op=setnx&k=lock:a")" = true ]'
check "redis-cli SET NX of the lock PHP holds" '[ -z "$(rc SET lock:a x NX PX 1000)" ]'
check "SET IFEQ with the current value" '[ "$(rc SET cli:k value2 IFEQ value1)" = OK ] && [ "$(rc GET cli:k)" = value2 ]'
check "SET IFEQ with another value" '[ -z "$(rc SET cli:k value3 IFEQ value1)" ] && [ "$(rc GET cli:k)" = value2 ]'
check "SET GET returns the old value" '[ "$(rc SET cli:k value4 GET)" = value2 ]'
check "SCAN with MATCH finds the key" '[ "$(rc --scan --pattern "cli:*")" = cli:k ]'
check "INFO has a keyspace" 'rc INFO keyspace | grep -q "^db0:keys="'
unknown=$(rc FOO bar 2>&1)
check "an unknown command gets Redis's error ($unknown)" '[ "$unknown" = "ERR unknown command '"'"'FOO'"'"', with args beginning with: '"'"'bar'"'"' " ]'

# --- python3-redis -----------------------------------------------------------
cat > "$dir/client.py" <<'PY'
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), password=sys.argv[3])
def check(what, ok):
    print(("ok " if ok else "FAIL ") + what)
check("get what PHP wrote", r.get("fpm:hello") == sys.argv[2].encode())
check("set", r.set("py:k", "v1") is True)
check("setnx free", r.setnx("py:lock", "t1") is True)
check("setnx held", r.setnx("py:lock", "t2") is False)
check("set nx px held", r.set("py:lock", "t3", nx=True, px=1000) is None)
check("delifeq other", r.execute_command("DELIFEQ", "py:lock", "t2") == 0)
check("delifeq holder", r.execute_command("DELIFEQ", "py:lock", "t1") == 1)
check("set ifeq", r.execute_command("SET", "py:k", "v2", "IFEQ", "v1") in (True, b"OK"))
check("set ifeq mismatch", r.execute_command("SET", "py:k", "v3", "IFEQ", "v1") in (None, False))
check("get after ifeq", r.get("py:k") == b"v2")
check("incr", r.incr("py:n") == 1 and r.incrby("py:n", 41) == 42)
check("mset mget", r.mset({"py:a": "1", "py:b": "2"}) and r.mget(["py:a", "py:x", "py:b"]) == [b"1", None, b"2"])
# A day: the race below takes minutes on a loaded host, and py:a must
# outlive it (ephpm get --json reads it after).
check("expire ttl", r.expire("py:a", 86400) and 0 < r.ttl("py:a") <= 86400)
check("scan match", sorted(r.scan_iter(match="py:*", count=50)) == [b"py:a", b"py:b", b"py:k", b"py:n"])
check("info", "db0" in r.info("keyspace"))
try:
    r.execute_command("FOO", "bar")
    check("unknown command refused", False)
except redis.ResponseError as e:
    check("unknown command refused: " + str(e), str(e).startswith("unknown command 'FOO'"))
check("client setname", r.client_setname("py") and r.client_getname() == "py")
PY
while read -r line; do
  check "python3-redis: ${line#* }" '[ "${line%% *}" = ok ]'
done < <($python "$dir/client.py" "$port" "$worker" "$pass" 2>&1)
check "PHP reads what python SET" '[ "$(request kv.php "op=get&k=py:k")" = "'"'"'v2'"'"'" ]'

# --- the race: N php-fpm requests and N Python clients per round -------------
cat > "$dir/race.php" <<'PHP'
<?php
[$n, $rounds, $id] = [(int) $_GET['n'], (int) $_GET['rounds'], $_GET['id']];
for ($r = 1; $r <= $rounds; $r++) {
    ephpm_kv_incr("race:ready:$r");
    $deadline = microtime(true) + 600;              // a hang catch
    while (ephpm_kv_get("race:go:$r") === null) {   // the barrier: a key the test sets
        if (microtime(true) > $deadline) { echo "timeout $r\n"; exit; }
        usleep(1000);
    }
    echo $r, ' ', ephpm_kv_setnx("race:lock:$r", "php-$id", 300) ? 1 : 0, "\n";
}
PHP
cat > "$dir/race.py" <<'PY'
import sys, time, redis
port, rounds, ident = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = redis.Redis(host="127.0.0.1", port=port, password=sys.argv[4])
r.ping()
for n in range(1, rounds + 1):
    r.incr("race:ready:%d" % n)
    deadline = time.monotonic() + 600                # a hang catch
    while r.get("race:go:%d" % n) is None:          # the barrier: a key the test sets
        if time.monotonic() > deadline:
            print("timeout %d" % n); sys.exit(0)
        time.sleep(0.001)
    print(n, 1 if r.set("race:lock:%d" % n, "py-" + ident, nx=True, ex=300) else 0, flush=True)
PY
for i in $(seq "$N"); do
  request race.php "n=$N&rounds=$R&id=$i" > "$dir/race.php.$i" &
  bg+=($!)
  $python "$dir/race.py" "$port" "$R" "$i" "$pass" > "$dir/race.py.$i" 2>&1 &
  bg+=($!)
done
released=0
for r in $(seq "$R"); do
  poll 60000 '[ "$(rc GET "race:ready:$r")" = "$((2 * N))" ]' || { echo "round $r: not all $((2 * N)) reached the barrier"; break; }
  rc SET "race:go:$r" 1 > /dev/null
  released=$r
done
for p in "${bg[@]}"; do wait "$p" || true; done
bg=()
check "all $R rounds released" '[ "$released" = "$R" ]'
bad=0 php_wins=0 py_wins=0
for r in $(seq "$R"); do
  w=$(cat "$dir"/race.php.* "$dir"/race.py.* | awk -v r="$r" '$1 == r { s += $2; n++ } END { print s + 0, n + 0 }')
  read -r wins seen <<< "$w"
  if [ "$wins" != 1 ] || [ "$seen" != "$((2 * N))" ]; then bad=$((bad + 1)); echo "round $r: $wins winners among $seen answers"; fi
done
php_wins=$(cat "$dir"/race.php.* | awk '$2 == 1' | wc -l)
py_wins=$(cat "$dir"/race.py.* | awk '$2 == 1' | wc -l)
echo "race: $R rounds of $N php-fpm requests and $N Python clients: PHP won $php_wins, Python $py_wins"
check "exactly one winner in each of $R rounds, every participant answering" '[ "$bad" = 0 ]'
holder=$(rc GET "race:lock:1")
check "the lock holds its winner's token ($holder)" '[[ "$holder" =~ ^(php|py)-[0-9]+$ ]]'

# --- a session lock held by a worker shows in ephpm locks, with its pid ------
cat > "$dir/session.php" <<'PHP'
<?php
session_id('clisess' . $_GET['s']);
session_start();
ephpm_kv_set('sess:holder', (string) getmypid());
$deadline = microtime(true) + 600;                 // a hang catch
while (ephpm_kv_get('sess:release') === null && microtime(true) < $deadline) { usleep(1000); }
$_SESSION['n'] = 1;
echo 'done';
PHP
request session.php "s=$$" > "$dir/session.out" &
sess_req=$!
bg+=($sess_req)
poll 6000 '[ -n "$(rc GET sess:holder)" ]'
holder_pid=$(rc GET sess:holder)
locks=$("$ephpm" --pool "$pool" locks)
echo "$locks"
check "ephpm locks names the worker holding the session lock (pid $holder_pid)" \
  'grep -Eq "^session_lock:clisess$$ +[0-9][0-9.ms]* +pid $holder_pid +0 +exclusive" <<< "$locks"'
check "ephpm locks lists the race's locks" 'grep -q "^race:lock:1 " <<< "$locks"'
locks_json=$("$ephpm" --pool "$pool" locks --json)
check "ephpm locks --json: holder_pid" '$python -c "import json,sys; l=[x for x in json.load(sys.stdin)[\"locks\"] if x[\"key\"]==\"session_lock:clisess$$\"]; sys.exit(0 if l and l[0][\"holder_pid\"]==$holder_pid else 1)" <<< "$locks_json"'
rc SET sess:release 1 > /dev/null
wait "$sess_req" || true
bg=()
check "the session request finished" '[ "$(cat "$dir/session.out")" = done ]'
check "the released session lock is gone from ephpm locks" '! "$ephpm" --pool "$pool" locks | grep -q "^session_lock:"'

# --- the other commands, with and without --json ----------------------------
json_ok() { $python -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if $1 else 1)"; }
out=$("$ephpm" --pool "$pool" stats)
check "ephpm stats" 'grep -q "^keys " <<< "$out" && grep -q "^processes " <<< "$out"'
check "ephpm stats --json" '"$ephpm" --pool "$pool" stats --json | json_ok "d[\"backend\"] == \"shm\" and d[\"keys\"] > 0 and d[\"processes\"] >= 2"'
out=$("$ephpm" --pool "$pool" keys py:)
check "ephpm keys PREFIX" 'grep -q "^py:k " <<< "$out" && grep -q "^4 keys beginning with" <<< "$out"'
check "ephpm keys --json" '"$ephpm" --pool "$pool" keys py: --json | json_ok "sorted(k[\"key\"] for k in d[\"keys\"]) == [\"py:a\", \"py:b\", \"py:k\", \"py:n\"] and [k[\"size\"] for k in d[\"keys\"] if k[\"key\"] == \"py:k\"] == [2]"'
check "ephpm get" '[ "$("$ephpm" --pool "$pool" get py:k)" = v2 ]'
check "ephpm get --json" '"$ephpm" --pool "$pool" get py:a --json | json_ok "d[\"value\"] == \"1\" and 0 < d[\"ttl_ms\"] <= 86400000"'
check "ephpm get of a missing key fails" '! "$ephpm" --pool "$pool" get nope 2>/dev/null'
check "ephpm del" '"$ephpm" --pool "$pool" del py:k | grep -q "^deleted py:k"'
check "ephpm del --json" '"$ephpm" --pool "$pool" del py:b --json | json_ok "d[\"deleted\"] is True"'
check "PHP no longer sees the deleted key" '[ "$(request kv.php "op=get&k=py:k")" = NULL ]'
check "ephpm check" '"$ephpm" --pool "$pool" check | grep -q "every shard is consistent"'
check "ephpm check --json" '"$ephpm" --pool "$pool" check --json | json_ok "d[\"ok\"] is True"'
check "ephpm flush unconfirmed removes nothing" '! echo no | "$ephpm" --pool "$pool" flush 2>/dev/null && [ "$(rc EXISTS fpm:hello)" = 1 ]'
check "ephpm flush --yes" '"$ephpm" --pool "$pool" flush --yes | grep -q "^flushed"'
check "after the flush, nothing for PHP or RESP" '[ "$(request kv.php "op=get&k=fpm:hello")" = NULL ] && [ "$(rc DBSIZE)" = 0 ]'
request kv.php "op=set&k=after&v=1" > /dev/null
check "ephpm flush --yes --json, and PHP writes again" '"$ephpm" --pool "$pool" flush --yes --json | json_ok "d[\"flushed\"] is True" && [ "$(rc DBSIZE)" = 0 ]'
check "the segment is consistent after it all" '"$ephpm" --pool "$pool" check > /dev/null'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
