#!/usr/bin/env bash
# examples/status.php rendered by headless Chromium: the figures on the page
# are ephpm_kv_stats()'s, and a screenshot is kept as an artifact. Under
# php-fpm with ephpm.kv_backend=memory the page says the store is private to
# the worker.
#
# Usage: status_page.sh /path/to/ephpm.so ARTIFACT_DIR [php-fpm binary]
set -euo pipefail
ext=$1
artifacts=$2
fpm=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$artifacts"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }

. "$src/tests/listen.sh"
server_start() { php -n -d "extension=$ext" -S "127.0.0.1:$1" -t "$src/examples" > "$dir/server.log" 2>&1 & listen_pid=$!; }
server_ready() { curl -s -o /dev/null "http://127.0.0.1:$1/"; }
listen_start server_start server_ready || { cat "$dir/server.log"; exit 1; }
pids+=("$listen_pid")
curl -s -o /dev/null "http://127.0.0.1:$port/lock.php?release=del_if_eq"   # something to count

chrome=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run
        --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$dir/profile")
"${chrome[@]}" --dump-dom "http://127.0.0.1:$port/status.php" > "$dir/dom.html" 2> "$dir/chrome.log"
"${chrome[@]}" --screenshot="$artifacts/status.png" --window-size=1000,1000 "http://127.0.0.1:$port/status.php" 2>> "$dir/chrome.log"
curl -s "http://127.0.0.1:$port/status.php?format=json" > "$dir/stats.json"

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
check "a screenshot was kept ($artifacts/status.png)" '[ -s "$artifacts/status.png" ]'

if [ -n "$fpm" ]; then
  cat > "$dir/fpm.conf" <<CONF
[global]
error_log = $dir/fpm.log
daemonize = no
[www]
listen = $dir/fpm.sock
pm = static
pm.max_children = 1
php_admin_value[display_errors] = 0
CONF
  root=(); [ "$(id -u)" = 0 ] && root=(-R)
  "$fpm" -n -F "${root[@]}" -y "$dir/fpm.conf" -d "extension=$ext" -d ephpm.kv_backend=memory &
  pids+=($!)
  # A minute for php-fpm to start, 300 s for the request: hang catches.
  for _ in $(seq 1200); do [ -S "$dir/fpm.sock" ] && break; sleep 0.05; done
  [ -S "$dir/fpm.sock" ] || { cat "$dir/fpm.log"; echo "php-fpm did not start"; exit 1; }
  SCRIPT_FILENAME="$src/examples/status.php" REQUEST_METHOD=GET timeout 300 cgi-fcgi -bind -connect "$dir/fpm.sock" > "$dir/fpm.html"
  check "under php-fpm with ephpm.kv_backend=memory the page says the store is private to the worker" 'grep -q private-banner "$dir/fpm.html"'
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
