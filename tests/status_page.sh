#!/usr/bin/env bash
# examples/status.php, the status page, in headless Chromium:
#   A. under php -S with the in-process store and nothing configured: the
#      figures on the page are ephpm_kv_stats()'s, no banner, inline SVG
#      only, actions off (the page says so, and a POST is refused);
#   B. on a php-fpm pool's segment (ephpm.kv_backend=shm://NAME): a php-fpm
#      worker sets a key, locks and a session; the page, served on the same
#      segment with a password set in a file that includes it, renders in
#      Chromium without a console message (--enable-logging), its key
#      browser's prefix filter finds the worker's key, and its tables show
#      the locks (TTL, holders, waiters), the session, the shards; a POST
#      delete without the token is refused and leaves the key (a php-fpm
#      worker still sees it), with the token and the password it deletes
#      it, and the used token is refused again; the flush asks for its
#      confirmation; ?format=prometheus parses (every line a comment or
#      `name{labels} value`); php-fpm serves the page too. The screenshot,
#      <ARTIFACT_DIR>/status-page.png, is docs/status-page.png's source;
#   C. under php-fpm with ephpm.kv_backend=memory the page says the store is
#      private to the worker.
# Every wait is a bounded poll.
#
# Usage: status_page.sh /path/to/ephpm.so ARTIFACT_DIR [php-fpm binary]
set -euo pipefail
ext=$1
artifacts=$2
fpm=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
seg=statuspage-$$
seg_files=(/dev/shm/ephpm-$seg.$(id -u) /dev/shm/ephpm-$seg.$(id -u).fences1)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -f "${seg_files[@]}"
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$artifacts"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }
poll() { local i; for ((i = 0; i < $1; i++)); do eval "$2" && return 0; sleep 0.05; done; return 1; }

. "$src/tests/listen.sh"
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run
        --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$dir/profile")
# dom URL OUT: the DOM Chromium rendered, its console messages in OUT.log
# (Chromium logs each at INFO, whatever its level: the page must log none).
dom() { "${chrome[@]}" --enable-logging=stderr --v=0 --dump-dom "$1" > "$2" 2> "$2.log"; }
consoled() { grep -h "CONSOLE" "$@" || true; }

# ---- A: php -S, the in-process store, nothing configured -------------------
server_start() { php -n -d "extension=$ext" -S "127.0.0.1:$1" -t "$src/examples" > "$dir/server.log" 2>&1 & listen_pid=$!; }
server_ready() { curl -s -o /dev/null "http://127.0.0.1:$1/"; }
listen_start server_start server_ready || { cat "$dir/server.log"; exit 1; }
pids+=("$listen_pid")
a="http://127.0.0.1:$port"
curl -s -o /dev/null "$a/lock.php?release=del_if_eq"   # something to count

dom "$a/status.php" "$dir/dom.html"
"${chrome[@]}" --screenshot="$artifacts/status.png" --window-size=1000,1000 "$a/status.php" 2> /dev/null
curl -s "$a/status.php?format=json" > "$dir/stats.json"

# Every figure the browser rendered equals the one ephpm_kv_stats() gives
# (read with DOM, from php8.2-xml: hence no -n).
compare=$(php -r '
    $dom = new DOMDocument();
    @$dom->loadHTMLFile($argv[1]);
    $stats = json_decode(file_get_contents($argv[2]), true);
    $n = 0; $bad = [];
    foreach ((new DOMXPath($dom))->query("//td[@data-stat]") as $td) {
        $name = $td->getAttribute("data-stat");
        $n++;
        if ((string) $stats[$name] !== $td->getAttribute("data-value")) {
            $bad[] = "$name: page " . $td->getAttribute("data-value") . ", stats " . $stats[$name];
        }
    }
    echo $n, " figures", $bad ? "; differ: " . implode("; ", $bad) : "", "\n";
' "$dir/dom.html" "$dir/stats.json")
echo "rendered: $compare"
check "the page shows the store's figures ($compare)" '[[ "$compare" =~ ^[1-9][0-9]*\ figures$ ]]'
check "the lock demo shows in them" 'grep -q "\"set_nx_wins\": [1-9]" "$dir/stats.json"'
check "no banner outside php-fpm" '! grep -q private-banner "$dir/dom.html"'
check "inline SVG charts, no external resource" 'grep -q "<svg" "$dir/dom.html" && ! grep -Eq "(src|href)=\"https?:" "$dir/dom.html"'
check "no console message: $(consoled "$dir/dom.html.log" | head -3)" '[ -z "$(consoled "$dir/dom.html.log")" ]'
check "with nothing configured the page says actions are off" 'grep -q "id=\"actions-off\"" "$dir/dom.html" && ! grep -q "name=\"token\"" "$dir/dom.html"'
code=$(curl -s -o "$dir/off.html" -w '%{http_code}' -d action=flush -d confirm=flush "$a/status.php")
check "and refuses a POST (HTTP $code)" '[ "$code" = 403 ] && grep -q "actions are off" "$dir/off.html"'
check "a screenshot was kept ($artifacts/status.png)" '[ -s "$artifacts/status.png" ]'

if [ -z "$fpm" ]; then
  echo "$passed passed, $failed failed (no php-fpm: B and C not run)"
  [ "$failed" = 0 ]
  exit
fi

# ---- B: a php-fpm pool's segment ------------------------------------------
root=(); [ "$(id -u)" = 0 ] && root=(-R)
fpm_start() { # fpm_start NAME BACKEND CHILDREN
  cat > "$dir/$1.conf" <<CONF
[global]
error_log = $dir/$1.log
daemonize = no
[$1]
listen = $dir/$1.sock
pm = static
pm.max_children = $3
php_admin_value[display_errors] = 0
CONF
  "$fpm" -n -F "${root[@]}" -y "$dir/$1.conf" -d "extension=$ext" -d "ephpm.kv_backend=$2" \
    -d session.save_handler=ephpm -d session.use_strict_mode=0 -d session.use_cookies=0 -d session.cache_limiter= &
  pids+=($!)
  poll 1200 "[ -S '$dir/$1.sock' ]" || { cat "$dir/$1.log"; echo "php-fpm did not start"; exit 1; }
}
# request POOL SCRIPT [QUERY]: the body of a php-fpm request.
request() {
  SCRIPT_FILENAME="$2" QUERY_STRING="${3:-}" REQUEST_METHOD=GET \
    timeout 300 cgi-fcgi -bind -connect "$dir/$1.sock" | sed -n '/^\r\?$/,$p' | tail -n +2
}
fpm_start www "shm://$seg" 3

mkdir -p "$dir/www"
probe="status:probe:$$:$RANDOM"
probe_hex=$(printf '%s' "$probe" | od -An -tx1 | tr -d ' \n')
cat > "$dir/www/set.php" <<'PHP'
<?php
// A worker's keys: the probe, an exclusive lock with a waiter, a read-held
// lock, a value stored as WordPress's wp_cache_add() stores one (set_nx),
// and a session whose lock this request keeps.
ephpm_kv_set($_GET['probe'], 'set by php-fpm worker ' . getmypid(), 600);
ephpm_kv_setnx('status:lock:report', 'tok', 120);
ephpm_kv_setnx('status:added', serialize(['an add()ed value']), 600);
ephpm_kv_lock_read('status:rw:catalog', 120);
ephpm_kv_lock_read('status:rw:catalog', 120);
ephpm_kv_set("status:bin:\0\xff<b>", 'binary key', 600);
session_id('statuspage' . getmypid());
session_start();
$_SESSION['n'] = 1;
session_write_close();
echo getmypid();
PHP
cat > "$dir/www/exists.php" <<'PHP'
<?php echo ephpm_kv_exists(hex2bin($_GET['key'])) ? 'yes' : 'no';
PHP
cat > "$dir/www/wait.php" <<'PHP'
<?php echo ephpm_kv_lock('status:lock:report', 30, 20.0) === false ? 'timed out' : 'got it';
PHP
worker=$(request www "$dir/www/set.php" "probe=$probe")
check "a php-fpm worker set the probe (pid $worker)" '[[ "$worker" =~ ^[0-9]+$ ]] && [ "$(request www "$dir/www/exists.php" "key=$probe_hex")" = yes ]'
# A waiter for the exclusive lock, in another worker, while the page renders.
request www "$dir/www/wait.php" > "$dir/wait.out" &
pids+=($!)

# The page on the same segment, with a password set in a file that
# includes it (as a user sets it in the page or beside it).
password="pw-$$-$RANDOM"
cat > "$dir/www/status.php" <<PHP
<?php
const EPHPM_STATUS_PASSWORD = '$password';
require '$src/examples/status.php';
PHP
page_start() { php -n -d "extension=$ext" -d "ephpm.kv_backend=shm://$seg" -S "127.0.0.1:$1" -t "$dir/www" > "$dir/page.log" 2>&1 & listen_pid=$!; }
listen_start page_start server_ready || { cat "$dir/page.log"; exit 1; }
pids+=("$listen_pid")
b="http://127.0.0.1:$port"

# The key browser's prefix filter (its GET form's query) finds the probe.
prefix=$(php -r 'echo rawurlencode($argv[1]);' "status:probe:$$")
cat > "$dir/waiters.php" <<'PHP'
<?php
$n = 0;
do {
    foreach (ephpm_kv_scan('status:lock:report', $cursor, 100, true) as $r) {
        $n += (int) $r['waiters'];
    }
} while ($cursor !== 0);
echo $n;
PHP
waiting() { [ "$(php -n -d "extension=$ext" -d "ephpm.kv_backend=shm://$seg" "$dir/waiters.php")" = 1 ]; }
poll 1200 waiting || echo "(the waiter is not in line)"
dom "$b/status.php?prefix=$prefix" "$dir/b.html"
"${chrome[@]}" --screenshot="$artifacts/status-page.png" --window-size=1100,2400 --hide-scrollbars "$b/status.php?prefix=status:" 2> /dev/null
read -r found_key token locks_rows waiters shards sess < <(php -r '
    $dom = new DOMDocument();
    @$dom->loadHTMLFile($argv[1]);
    $x = new DOMXPath($dom);
    $keys = [];
    foreach ($x->query("//table[@id=\"keys-table\"]//td[@data-key-hex]") as $td) {
        $keys[] = $td->getAttribute("data-key-hex");
    }
    $token = $x->query("//input[@name=\"token\"]")->item(0)?->getAttribute("value") ?? "none";
    $rows = $x->query("//table[@id=\"locks-table\"]//tr[td]");
    $waiters = 0;
    $lockKeys = [];
    foreach ($rows as $tr) {
        $td = $tr->getElementsByTagName("td");
        $lockKeys[] = $td->item(0)->textContent . "=" . $td->item(1)->textContent . "/" . $td->item(2)->textContent
            . "/" . str_replace(" ", "_", $td->item(6)->textContent);
        if ($td->item(0)->textContent === "status:lock:report") {
            $waiters = $td->item(4)->textContent;
        }
    }
    sort($lockKeys);
    echo (in_array(bin2hex($argv[2]), $keys, true) ? "found" : "missing:" . implode(",", $keys)), " ", $token, " ",
        implode(",", $lockKeys), " ", $waiters, " ",
        $x->query("//table[@id=\"shards-table\"]//tr[td]")->length, " ",
        trim($x->query("//td[@id=\"session-count\"]")->item(0)?->textContent ?? "none"), "\n";
' "$dir/b.html" "$probe")
echo "B: key $found_key, token $token, locks $locks_rows, waiters $waiters, shards $shards, sessions $sess"
check "no console message on the segment's page: $(consoled "$dir/b.html.log" | head -3)" '[ -z "$(consoled "$dir/b.html.log")" ]'
check "the key browser's prefix filter finds the worker's key" '[ "$found_key" = found ]'
check "only keys of the prefix are listed" '[ "$(grep -c "data-key-hex=" "$dir/b.html")" = 1 ]'
check "the held locks: exclusive, shared by 2, the session's" \
  '[[ "$locks_rows" == *"status:lock:report=exclusive/1"* && "$locks_rows" == *"status:rw:catalog=shared/2"* ]]'
check "the waiter for the exclusive lock is counted ($waiters)" '[ "$waiters" = 1 ]'
check "the table says what each entry surely is: a lock with a waiter, a read lock" \
  '[[ "$locks_rows" == *"status:lock:report=exclusive/1/a_lock_(callers_wait_for_it)"* && "$locks_rows" == *"status:rw:catalog=shared/2/a_lock_held_for_reading"* ]]'
check "a value stored with set_nx, as wp_cache_add() stores one, is no lock for sure: the table says either" \
  '[[ "$locks_rows" == *"status:added=exclusive/1/a_lock,_or_a_value_add()_stored"* ]]'
check "the table is named for what it holds: locks and add()ed values" \
  'grep -q "Locks, and entries taken with set_nx" "$dir/b.html" && grep -q "entries taken with set_nx (locks and add()ed values)" "$dir/b.html"'
check "the segment's shards are shown ($shards)" '[ "$shards" -ge 1 ]'
check "the session is counted ($sess)" '[ "$sess" -ge 1 ]'
check "actions are on with the password" 'grep -q "id=\"actions-on\"" "$dir/b.html" && [[ "$token" =~ ^[0-9a-f]{32}$ ]]'
curl -s "$b/status.php?prefix=status:added" > "$dir/added.html"
check "the key browser calls the set_nx value a lock or an add()ed value" \
  'sed -n "/id=\"keys-table\"/,\$p" "$dir/added.html" | grep -q "<td>lock or add()ed value</td>"'
curl -s "$b/status.php?prefix=status:bin" > "$dir/bin.html"
check "no key is printed raw: the binary one in escapes" 'grep -qF "status:bin:\x00\xff&lt;b&gt;" "$dir/bin.html"'

exists() { request www "$dir/www/exists.php" "key=$probe_hex"; }
post() { curl -s -o "$dir/post.html" -w '%{http_code}' "$@" "$b/status.php"; }
code=$(post -d action=delete -d "key=$probe_hex" -d "password=$password")
check "a delete without the token is refused (HTTP $code) and the key stays" '[ "$code" = 403 ] && [ "$(exists)" = yes ]'
code=$(post -d action=delete -d "key=$probe_hex" -d "password=$password" -d "token=0123456789abcdef0123456789abcdef")
check "with a made-up token too (HTTP $code)" '[ "$code" = 403 ] && [ "$(exists)" = yes ]'
code=$(post -d action=delete -d "key=$probe_hex" -d "token=$token" -d "password=$password")
check "with the token and the password it deletes the key (HTTP $code), as php-fpm sees" '[ "$code" = 200 ] && [ "$(exists)" = no ] && grep -q "Deleted status:probe" "$dir/post.html"'
request www "$dir/www/set.php" "probe=$probe" > /dev/null
code=$(post -d action=delete -d "key=$probe_hex" -d "token=$token" -d "password=$password")
check "a used token is refused (HTTP $code)" '[ "$code" = 403 ] && [ "$(exists)" = yes ]'
token2=$(grep -o 'name="token" value="[0-9a-f]*"' "$dir/post.html" | head -1 | grep -o '[0-9a-f]\{32\}')
code=$(post -d action=delete -d "key=$probe_hex" -d "token=$token2" -d "password=wrong")
check "a wrong password is refused (HTTP $code)" '[ "$code" = 403 ] && [ "$(exists)" = yes ]'
token3=$(grep -o 'name="token" value="[0-9a-f]*"' "$dir/post.html" | head -1 | grep -o '[0-9a-f]\{32\}')
code=$(post -d action=flush -d "token=$token3" -d "password=$password" -d confirm=no)
check "a flush without its confirmation is not done (HTTP $code)" '[ "$code" = 400 ] && [ "$(exists)" = yes ]'

# Prometheus: every line a comment or name{labels} value.
curl -s "$b/status.php?format=prometheus" > "$dir/metrics.txt"
bad=$(grep -Ev '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.e+]+)$' "$dir/metrics.txt" || true)
check "?format=prometheus parses: $(echo "$bad" | head -2)" '[ -z "$bad" ] && [ -s "$dir/metrics.txt" ]'
check "and has the store's and the shards' figures" 'grep -q "^ephpm_keys{" "$dir/metrics.txt" && grep -q "^ephpm_shard_keys{.*shard=\"0\"" "$dir/metrics.txt" && grep -q "^ephpm_locks_held{.*} [1-9]" "$dir/metrics.txt"'
check "with its content type" 'curl -sI "$b/status.php?format=prometheus" | grep -qi "^content-type: text/plain; version=0.0.4"'

# php-fpm serves the page too: its browser finds the worker's key.
SCRIPT_FILENAME="$dir/www/status.php" QUERY_STRING="prefix=$prefix" REQUEST_METHOD=GET \
  timeout 300 cgi-fcgi -bind -connect "$dir/www.sock" > "$dir/fpm-page.html"
check "php-fpm serves the page, whose browser finds the key" 'grep -q "data-key-hex=\"$probe_hex\"" "$dir/fpm-page.html"'

# The flush, confirmed, empties the segment for every process.
token4=$(grep -o 'name="token" value="[0-9a-f]*"' "$dir/fpm-page.html" | head -1 | grep -o '[0-9a-f]\{32\}')
code=$(post -d action=flush -d "token=$token4" -d "password=$password" -d confirm=flush)
check "a confirmed flush with the token empties the store (HTTP $code)" '[ "$code" = 200 ] && [ "$(exists)" = no ]'
check "a screenshot was kept ($artifacts/status-page.png)" '[ -s "$artifacts/status-page.png" ]'

php_errors=$(grep -lE "<b>(Warning|Notice|Deprecated|Fatal error)</b>|PHP (Warning|Notice|Deprecated|Fatal)" "$dir"/*.html "$dir"/*.log 2>/dev/null || true)
check "no PHP error or warning in any page or log: $php_errors" '[ -z "$php_errors" ]'

# ---- C: the in-process store under php-fpm ---------------------------------
fpm_start priv memory 1
request priv "$src/examples/status.php" > "$dir/fpm.html"
check "under php-fpm with ephpm.kv_backend=memory the page says the store is private to the worker" 'grep -q private-banner "$dir/fpm.html"'
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
