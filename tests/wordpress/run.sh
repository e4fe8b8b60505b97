#!/usr/bin/env bash
# WordPress on ephpm's object cache (php/wordpress/object-cache.php), for
# real: Debian's WordPress served by php-fpm through FastCGI from a MariaDB
# of the test's own, both started here and stopped by PID. Each check
# asserts; the figures it measures are printed.
#
#   a. the front page, served 8 times, hits the cache: with the drop-in the
#      later requests miss less than the first and make fewer database
#      queries than the same site without it (both counted, printed)
#   b. a post edited (wp_update_post, in a request) shows at once on the
#      next front page and post page
#   c. a flush is the site's own: two sites on one store, one flushed, the
#      other's marker key is still found and its page still cached
#   d. a multisite network's sites keep their groups apart (a key of
#      "posts" set by site 1 is not site 2's, a key of the global group
#      "users" is both's; each site's post 1 is its own), within a request
#      and across requests
#   e. 20 requests released together at a barrier, each wp_cache_add() of
#      keys k0..k999: exactly one adds each key
#   f. 20 requests released together each update_option() of an option of
#      its own (added, then changed): afterwards the cached alloptions
#      holds all 20 values, as the database and get_option() do; then the
#      same with a whole-array drop-in (bench/wordpress/object-cache-apcu.php,
#      when APCu is installed), whose losses are printed, not asserted
#   g. examples/status.php, served by the same php-fpm, renders, and its
#      key and hit counts grew with the site's requests
#
# Every check runs on the pool's shared-memory segment (php-fpm with no
# ephpm setting) and, when $EPHPM_TEST_BACKEND is set (tests/with-redis.sh
# standalone sets it), on that backend too.
#
# Usage: tests/wordpress/run.sh PHP_FPM EPHPM_SO
# The drop-in is <source tree>/php/wordpress/object-cache.php, or
# $EPHPM_WP_DROPIN.
set -euo pipefail
wp_fpm=$1
ext=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$(dirname "$0")/../.." && pwd)
wp_lib_dir=$src/tests/wordpress
dropin=${EPHPM_WP_DROPIN:-$src/php/wordpress/object-cache.php}
[ -f "$dropin" ] || { echo "wordpress: no drop-in at $dropin" >&2; exit 1; }
dropin=$(cd "$(dirname "$dropin")" && pwd)/$(basename "$dropin")
plain_dropin=$src/bench/wordpress/object-cache-apcu.php
wp_tmp=$(mktemp -d)
. "$wp_lib_dir/lib.sh"
race_pids=() # the requests of a race in flight (a failure may leave them)
cleanup() {
  for p in "${race_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wp_stop_all
  rm -rf "$wp_tmp"
}
trap cleanup EXIT
wp_init
started=$SECONDS

passed=0 failed=0
check() { # check DESCRIPTION CONDITION (a shell expression)
  if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi
}
# field NAME FILE: the value of the line "NAME value" an action printed.
field() { awk -v n="$1" '$1 == n { print $2; exit }' "$2"; }

echo "WordPress $wp_version, PHP $wp_php_version ($wp_fpm), drop-in $dropin"

# --- the database and the sites -----------------------------------------------
wp_start_mariadb "$wp_tmp/db"
wp_ini "$wp_tmp/cli.ini"
# a: the site under test; a-nocache: the same site (same tables) without an
# object cache; b: a second site; m: a multisite network (site 2 at /two/);
# a-plain: site a's tables under the whole-array APCu drop-in.
wp_site "$wp_tmp/a" a_ site-a
wp_install "$wp_tmp/a" single "Site A"
wp_site "$wp_tmp/a-nocache" a_ site-a-nocache
wp_site "$wp_tmp/b" b_ site-b
wp_install "$wp_tmp/b" single "Site B"
wp_site "$wp_tmp/m" m_ site-m
wp_install "$wp_tmp/m" network "Network"
wp_site "$wp_tmp/m" m_ site-m 1
wp_install "$wp_tmp/m" add-site /two/ Two
wp_site "$wp_tmp/a-plain" a_ site-a-plain
for s in a b m; do wp_dropin "$wp_tmp/$s" "$dropin"; done
apcu=
if [ -f "$wp_ext_dir/apcu.so" ]; then
  apcu=extension=apcu
  wp_dropin "$wp_tmp/a-plain" "$plain_dropin"
fi
echo "installed in $((SECONDS - started)) s"

# --- requests -------------------------------------------------------------------
# figures ROOT [PATH]: the front page (or PATH) of a site: "queries misses
# cache-mode", and the body in $wp_tmp/page.
figures() {
  wp_get "$1" index.php "${3:-}" "${2:-/}" > "$wp_tmp/response"
  wp_body < "$wp_tmp/response" > "$wp_tmp/page"
  echo "$(wp_header X-WP-Queries < "$wp_tmp/response") $(wp_header X-WP-Cache-Misses < "$wp_tmp/response") $(wp_header X-WP-Cache < "$wp_tmp/response")"
}
# act ROOT QUERY: one action of actions.php; its lines in $wp_tmp/act.
act() { wp_get "$1" ephpm-test.php "$2" | wp_body > "$wp_tmp/act"; }

# flock_waiters FILE: how many processes wait in flock() on FILE
# (/proc/locks names the file MAJOR:MINOR:INODE, in hex, and each waiter
# on a line with "->").
flock_waiters() {
  local dev ino key
  read -r dev ino < <(stat -L -c '%d %i' "$1")
  key=$(printf '%02x:%02x:%d' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
  awk -v k="$key" '$2 == "->" && $7 == k { print $6 }' /proc/locks | sort -u | wc -l
}

# race N ROOT QUERY OUT: N requests of actions.php released together: each
# boots WordPress, then waits at a barrier (a file this shell holds an
# exclusive flock on) until all N wait there (then on the store's counter,
# actions.php says why). @I@ in QUERY is the
# request's number i, @I50@ is 50 i; request i's lines go to OUT.i. Returns non-zero if
# they did not all reach the barrier within 300 s (a hang catch: 20 WordPress
# boots at once take long on a loaded host).
race() {
  local n=$1 root=$2 query=$3 out=$4 barrier i q fd at=0 reqs=()
  barrier=$(mktemp "$wp_tmp/barrier.XXXXXX")
  chmod 644 "$barrier"
  exec {fd}< "$barrier"
  flock -x "$fd"
  for ((i = 0; i < n; i++)); do
    q=${query//@I50@/$((i * 50))}
    { wp_get "$root" ephpm-test.php "${q//@I@/$i}&barrier=$barrier&racers=$n" | wp_body > "$out.$i"; } &
    reqs+=($!)
    race_pids+=($!)
  done
  for _ in $(seq 3000); do
    at=$(flock_waiters "$barrier")
    [ "$at" -ge "$n" ] && break
    sleep 0.1
  done
  flock -u "$fd"
  exec {fd}<&-
  wait "${reqs[@]}" || true
  race_pids=()
  [ "$at" -ge "$n" ] || { echo "race: $at of $n requests reached the barrier"; return 1; }
}

# --- the checks, on one backend -------------------------------------------------
run_checks() { # run_checks LABEL [BACKEND]
  local label=$1 backend=${2:-} ini=() t0=$SECONDS tag i f
  echo
  echo "== $label"
  [ -n "$backend" ] && ini+=("ephpm.kv_backend = \"$backend\"")
  wp_ini "$wp_tmp/fpm-$label.ini" "extension = $ext" "${ini[@]}" $apcu
  wp_start_fpm "$wp_tmp/fpm-$label" 20 "$wp_tmp/fpm-$label.ini"
  tag=$label-$RANDOM

  # g (before): the store's figures before any WordPress request.
  wp_get "$src/examples" status.php format=json | wp_body > "$wp_tmp/stats0.json"
  local keys0 hits0
  keys0=$(wp_cli /dev/null -r 'echo json_decode(file_get_contents($argv[1]), true)["keys"] ?? -1;' "$wp_tmp/stats0.json")
  hits0=$(wp_cli /dev/null -r 'echo json_decode(file_get_contents($argv[1]), true)["hits"] ?? -1;' "$wp_tmp/stats0.json")

  # a. the front page, 8 times without the drop-in and 8 times with it.
  local without=() with=() misses=() mode q m
  for i in 1 2 3 4 5 6 7 8; do
    read -r q _ _ < <(figures "$wp_tmp/a-nocache")
    without+=("$q")
  done
  for i in 1 2 3 4 5 6 7 8; do
    read -r q m mode < <(figures "$wp_tmp/a")
    with+=("$q") misses+=("$m")
  done
  echo "a. front page, queries per request, without the drop-in: ${without[*]}"
  echo "   with it: ${with[*]} (cache misses: ${misses[*]}; $mode)"
  check "a. the drop-in is the site's persistent object cache (X-WP-Cache: $mode)" '[ "$mode" = external ]'
  check "a. the page renders with it" 'grep -q "<title>Site A" "$wp_tmp/page"'
  check "a. with the drop-in the 8th request makes fewer queries (${with[7]}) than without it (${without[7]})" \
    '[ "${with[7]}" -lt "${without[7]}" ]'
  check "a. with the drop-in the 8th request misses less (${misses[7]}) than the first (${misses[0]})" \
    '[ "${misses[7]}" -lt "${misses[0]}" ]'

  # b. a post edited in one request shows on the next page views.
  local title=Edited-$tag
  act "$wp_tmp/a" "do=edit&id=1&title=$title"
  check "b. wp_update_post succeeded ($(field updated "$wp_tmp/act"))" '[ "$(field updated "$wp_tmp/act")" = 1 ]'
  read -r q m _ < <(figures "$wp_tmp/a")
  check "b. the front page shows the new title at once" 'grep -q "$title" "$wp_tmp/page"'
  read -r q m _ < <(figures "$wp_tmp/a" / p=1)
  check "b. the post's page shows the new title at once" 'grep -q "<title>$title" "$wp_tmp/page"'
  echo "b. post 1 retitled $title: front page and post page show it"

  # c. flushing site a leaves site b's entries.
  local qb qb_after qa_after found_a found_b
  act "$wp_tmp/a" "do=marker-set&key=marker-$tag&value=a"
  act "$wp_tmp/b" "do=marker-set&key=marker-$tag&value=b"
  figures "$wp_tmp/b" > /dev/null
  read -r qb _ _ < <(figures "$wp_tmp/b")
  act "$wp_tmp/a" "do=flush"
  check "c. wp_cache_flush() on site a returned true" '[ "$(field flushed "$wp_tmp/act")" = true ]'
  act "$wp_tmp/a" "do=marker-get&key=marker-$tag"
  found_a=$(field found "$wp_tmp/act")
  act "$wp_tmp/b" "do=marker-get&key=marker-$tag"
  found_b="$(field found "$wp_tmp/act") $(field value "$wp_tmp/act")"
  read -r qb_after _ _ < <(figures "$wp_tmp/b")
  read -r qa_after _ _ < <(figures "$wp_tmp/a")
  echo "c. after site a's flush: a's marker found: $found_a; b's marker: $found_b; queries b $qb -> $qb_after, a ${with[7]} -> $qa_after"
  check "c. site a's flush removed a's marker" '[ "$found_a" = false ]'
  check "c. site a's flush kept b's marker" '[ "$found_b" = "true b" ]'
  check "c. site b's page is still cached ($qb_after queries, $qb before a's flush)" '[ "$qb_after" -le "$qb" ]'
  check "c. site a's page went back to the database ($qa_after queries)" '[ "$qa_after" -gt "${with[7]}" ]'

  # d. a multisite network: groups kept apart between its sites.
  local mtitle=Two-$tag
  act "$wp_tmp/m" "do=multisite&step=1&key=ms-$tag&title=$mtitle"
  cp "$wp_tmp/act" "$wp_tmp/ms1"
  act "$wp_tmp/m" "do=multisite&step=2&key=ms-$tag"
  cp "$wp_tmp/act" "$wp_tmp/ms2"
  echo "d. multisite, request 1: $(tr '\n' ' ' < "$wp_tmp/ms1")"
  echo "   request 2: $(tr '\n' ' ' < "$wp_tmp/ms2")"
  check "d. site 2 does not see site 1's key in the group posts" '[ "$(field site2_sees_site1_posts_key "$wp_tmp/ms1")" = false ]'
  check "d. site 2 sees the global group users' key set by site 1" '[ "$(field site2_users_key "$wp_tmp/ms1")" = global ]'
  check "d. site 1's key is its own after site 2 set one of the same name" '[ "$(field site1_posts_key "$wp_tmp/ms1")" = site-1 ]'
  check "d. next request: each site's posts key is its own" \
    '[ "$(field site1_posts_key "$wp_tmp/ms2")" = site-1 ] && [ "$(field site2_posts_key "$wp_tmp/ms2")" = site-2 ]'
  check "d. next request: the users key is both's" \
    '[ "$(field site1_users_key "$wp_tmp/ms2")" = global ] && [ "$(field site2_users_key "$wp_tmp/ms2")" = global ]'
  check "d. next request: each site's post 1 and name are its own" \
    '[ "$(field site2_post1 "$wp_tmp/ms2")" = "$mtitle" ] && [ "$(field site1_post1 "$wp_tmp/ms2")" = Hello_world! ] &&
     [ "$(field site1_name "$wp_tmp/ms2")" = Network ] && [ "$(field site2_name "$wp_tmp/ms2")" = Two ]'
  figures "$wp_tmp/m" /two/ > /dev/null
  check "d. site 2's front page shows its retitled post" 'grep -q "$mtitle" "$wp_tmp/page"'
  figures "$wp_tmp/m" / > /dev/null
  check "d. site 1's front page does not" 'grep -q "<title>Network" "$wp_tmp/page" && ! grep -q "$mtitle" "$wp_tmp/page"'

  # e. wp_cache_add() from 20 requests at once: one winner per key. (1000
  # keys, not 200: a request's 200 adds are often done before a second
  # request is scheduled on 2 CPUs.)
  local wins pids keys_won once spread times
  if race 20 "$wp_tmp/a" "do=race-add&group=race-$tag&keys=1000&start=@I50@" "$wp_tmp/add"; then
    wins=$(cat "$wp_tmp"/add.* | awk '$1 == "won" && $2 != "-" { n = split($2, k, ","); for (i = 1; i <= n; i++) print k[i] }' | sort -n | uniq -c)
    pids=$(cat "$wp_tmp"/add.* | awk '$1 == "pid" { print $2 }' | sort -u | wc -l)
    keys_won=$(grep -c . <<< "$wins" || true)
    once=$(awk '$1 == 1' <<< "$wins" | wc -l)
    spread=$(cat "$wp_tmp"/add.* | awk '$1 == "won" { print ($2 == "-") ? 0 : split($2, k, ",") }' | sort -n | tr '\n' ' ')
    times=$(cat "$wp_tmp"/add.* | awk '$1 == "us" { print $2 }' | sort -n | sed -n '1p;$p' | tr '\n' ' ')
    echo "e. 20 requests (in $pids workers) each adding k0..k999 (from k0, k50, k100, ...): $keys_won keys added," \
      "$once of them by one request only; keys each request added: $spread; its adds took $times us (fewest, most)"
    check "e. the 20 requests ran in 20 workers" '[ "$pids" = 20 ]'
    check "e. every key k0..k999 was added by exactly one request" '[ "$keys_won" = 1000 ] && [ "$once" = 1000 ]'
  else
    check "e. the 20 requests reached the barrier" false
  fi

  # f. update_option() from 20 requests at once, 3 rounds: alloptions keeps them all.
  # options_race ROOT NAME: 3 rounds; in each, 20 requests at once add the
  # options NAME<round>_0..19 (value v0..v19), then 20 change them (w0..w19);
  # after each, a new request reports on them (in $wp_tmp/options-NAME*).
  options_race() {
    local root=$1 name=$2 round phase value
    for round in 1 2 3; do
      figures "$root" > /dev/null # alloptions in the cache before the race
      for phase in added:v changed:w; do
        value=${phase#*:}
        race 20 "$root" "do=race-option&name=${name}${round}_@I@&value=$value@I@" "$wp_tmp/opt" || return 1
        act "$root" "savequeries=1&do=options&name=${name}${round}_&n=20&value=$value"
        echo "round $round, ${phase%:*}: alloptions from the database: $(field alloptions_from_db "$wp_tmp/act"), in the cache:" \
          "$(field alloptions_cached "$wp_tmp/act"); of the 20 options, missing from it: $(field cache_missing "$wp_tmp/act")," \
          "stale in it: $(field cache_stale "$wp_tmp/act"), wrong in the database: $(field db_wrong "$wp_tmp/act")," \
          "wrong from get_option(): $(field get_option_wrong "$wp_tmp/act")"
        cp "$wp_tmp/act" "$wp_tmp/options-$name-$round-${phase%:*}"
      done
    done
  }
  # sum NAME FIELD [PHASE]: FIELD summed over the reports of options_race NAME.
  sum() { cat "$wp_tmp/options-$1"-*"${3:-}" | awk -v f="$2" '$1 == f { n += $2 } END { print n + 0 }'; }
  # count NAME FIELD VALUE: how many reports say FIELD VALUE.
  count() { cat "$wp_tmp/options-$1"-* | awk -v f="$2" -v v="$3" '$1 == f && $2 == v { n++ } END { print n + 0 }'; }
  local oname=opt_${tag//-/_}_
  if options_race "$wp_tmp/a" "$oname" > "$wp_tmp/options.log"; then
    sed 's/^/f. /' "$wp_tmp/options.log"
    check "f. after every race the next request's alloptions came from the cache" \
      '[ "$(count "$oname" alloptions_from_db false)" = 6 ] && [ "$(count "$oname" alloptions_cached true)" = 6 ]'
    check "f. all 20 options in the cached alloptions with their values after every race ($(sum "$oname" cache_missing) missing, $(sum "$oname" cache_stale) stale)" \
      '[ "$(sum "$oname" cache_missing)" = 0 ] && [ "$(sum "$oname" cache_stale)" = 0 ]'
    check "f. all 20 in the database, and read back by get_option() ($(sum "$oname" db_wrong), $(sum "$oname" get_option_wrong) wrong)" \
      '[ "$(sum "$oname" db_wrong)" = 0 ] && [ "$(sum "$oname" get_option_wrong)" = 0 ]'
  else
    cat "$wp_tmp/options.log"
    check "f. the 20 requests reached the barrier" false
  fi
  if [ -n "$apcu" ] && [ -z "$backend" ]; then
    oname=plain_${tag//-/_}_
    echo "f. the same with a whole-array drop-in ($(basename "$plain_dropin"), not asserted):"
    if options_race "$wp_tmp/a-plain" "$oname" > "$wp_tmp/options.log"; then
      sed 's/^/   /' "$wp_tmp/options.log"
      echo "   in all: after the adds, $(sum "$oname" cache_missing added) of 60 options missing from alloptions;" \
        "after the changes, $(($(sum "$oname" cache_missing changed) + $(sum "$oname" cache_stale changed))) of 60 missing or stale there," \
        "$(sum "$oname" get_option_wrong changed) read stale by get_option()"
    else
      echo "   (the requests did not all reach the barrier)"
    fi
  fi

  # g. the status page, served by the same php-fpm.
  local keys1 hits1 backend_name
  wp_get "$src/examples" status.php format=json | wp_body > "$wp_tmp/stats1.json"
  wp_get "$src/examples" status.php | wp_body > "$wp_tmp/status.html"
  keys1=$(wp_cli /dev/null -r 'echo json_decode(file_get_contents($argv[1]), true)["keys"] ?? -1;' "$wp_tmp/stats1.json")
  hits1=$(wp_cli /dev/null -r 'echo json_decode(file_get_contents($argv[1]), true)["hits"] ?? -1;' "$wp_tmp/stats1.json")
  backend_name=$(wp_cli /dev/null -r 'echo json_decode(file_get_contents($argv[1]), true)["backend"] ?? "?";' "$wp_tmp/stats1.json")
  echo "g. status page: backend $backend_name, keys $keys0 -> $keys1, hits $hits0 -> $hits1"
  check "g. the status page renders under the same php-fpm" \
    'grep -q "<h1>ephpm status</h1>" "$wp_tmp/status.html" && grep -q "data-stat=\"keys\"" "$wp_tmp/status.html"'
  check "g. it shows the store serving ($backend_name)" \
    'if [ -n "$backend" ]; then [ "$backend_name" = redis ]; else [ "$backend_name" = shm ]; fi'
  check "g. its key count grew with the sites' requests ($keys0 -> $keys1)" '[ "$keys1" -gt "$keys0" ]'
  check "g. its hit count grew with them ($hits0 -> $hits1)" '[ "$hits1" -gt "$hits0" ]'
  # The key browser lists a site's entries by the drop-in's prefix for it
  # ("wp<length>:<salt>"), and only that site's.
  wp_get "$src/examples" status.php prefix=wp6:site-a | wp_body > "$wp_tmp/status-site.html"
  # The browser's rows: the part of the page from its heading on (the locks
  # table above it lists every lock, set_nx entries of other sites too).
  sed -n '/id="keys"/,$p' "$wp_tmp/status-site.html" > "$wp_tmp/status-browser.html"
  local first_keys
  first_keys=$(grep -o 'class="key"[^>]*>[^<]*' "$wp_tmp/status-browser.html" | sed 's/.*>//' | head -3 | tr '\n' ' ' || true)
  check "g. its key browser lists site a's entries, and not site b's (first: ${first_keys:-none})" \
    'grep -q ">wp6:site-a" "$wp_tmp/status-browser.html" && ! grep -q ">wp6:site-b" "$wp_tmp/status-browser.html"'

  wp_stop "$wp_fpm_pid"
  echo "($label: $((SECONDS - t0)) s)"
}

run_checks segment
if [ -n "${EPHPM_TEST_BACKEND:-}" ]; then
  run_checks redis "$EPHPM_TEST_BACKEND"
else
  echo "EPHPM_TEST_BACKEND is not set: the checks ran on the segment only (tests/with-redis.sh standalone sets it)"
fi

fatal=$(grep -c 'PHP Fatal' "$wp_tmp/php-errors.log" 2>/dev/null || true)
check "no PHP fatal error in the requests' log ($wp_tmp/php-errors.log: ${fatal:-0})" '[ "${fatal:-0}" = 0 ]'
if [ -s "$wp_tmp/php-errors.log" ]; then
  echo "PHP's log (first lines):"
  head -20 "$wp_tmp/php-errors.log"
fi
echo "$passed passed, $failed failed, in $((SECONDS - started)) s"
[ "$failed" = 0 ]
