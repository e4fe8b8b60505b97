#!/usr/bin/env bash
# The WordPress benchmark (issue 28): the front page of Debian's WordPress
# (10 posts), served through php-fpm by pools of fixed size, each under
# one object cache, side by side in one run:
#   none          no persistent object cache (WordPress's per-request one)
#   apcu          bench/wordpress/object-cache-apcu.php, APCu (the pool's memory)
#   phpredis      bench/wordpress/object-cache-phpredis.php, Redis through phpredis
#   ephpm-shm     php/wordpress/object-cache.php, ephpm with no setting (the pool's segment)
#   ephpm-redis   php/wordpress/object-cache.php, ephpm on Redis
# The two baselines are minimal drop-ins of the same shape as ephpm's (a
# runtime cache in front of the store, one key per entry). It prints, with
# the CPU model, the build and the date, requests per second and the
# database queries per request of each (bench/wordpress/load, which takes
# the pools in turn, round after round), once per theme: the release's
# default block theme, whose rendering takes most of a request, and a
# classic one (Twenty Twenty-One), where the database's share is larger. The site's database is a MariaDB,
# Redis a redis-server, both started here and stopped by PID, as is every
# php-fpm (tests/wordpress/lib.sh). On a host shared with other work the
# rates swing from round to round; the CPU time a worker spent per request
# (read in the request, getrusage) is the steadier figure.
#
# Usage: bench/wordpress.sh
# Settings (environment): WORKERS (php-fpm workers per pool, default 4),
# CONCURRENCY (connections at once, default 8), REQUESTS (per pool and
# round, default 100), ROUNDS (default 9: short rounds, so that a busy spell of
# a shared host falls on every pool alike), THEMES (default
# "twentytwentythree twentytwentyone"; those not installed are left out).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
scripts/setup.sh test > /dev/null
. scripts/go-env.sh
workers=${WORKERS:-4} concurrency=${CONCURRENCY:-8} requests=${REQUESTS:-100} rounds=${ROUNDS:-9}

# As bench/run.sh: figures only from an optimised build.
ext_flags=$(sed -n 's/^C_FLAGS = //p' build/CMakeFiles/ephpm.dir/flags.make)
build="CMAKE_BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' build/CMakeCache.txt), ephpm.so compiled with$(grep -o -- ' -O[0-3s]\| -g\b\| -DNDEBUG' <<< " $ext_flags" | tr -d '\n'), at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo ' (modified)')"
grep -q -- ' -O[1-3s]' <<< " $ext_flags" || { echo "bench: build/ is not optimised ($ext_flags)" >&2; exit 1; }
dropin=${EPHPM_WP_DROPIN:-$src/php/wordpress/object-cache.php}
[ -f "$dropin" ] || { echo "bench: no drop-in at $dropin" >&2; exit 1; }

wp_tmp=$(mktemp -d)
wp_fpm=$(command -v php-fpm8.2 || echo /usr/sbin/php-fpm8.2)
wp_lib_dir=$src/tests/wordpress
. "$wp_lib_dir/lib.sh"
trap 'wp_stop_all; rm -rf "$wp_tmp"' EXIT
wp_init

# A Redis server each for phpredis and ephpm-redis, so that each one's
# commands per request can be counted (INFO commandstats).
. tests/listen.sh # listen_free_port
declare -A redis_port
for name in phpredis ephpm-redis; do
  port=$(listen_free_port)
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$wp_tmp" > "$wp_tmp/redis-$name.log" 2>&1 &
  wp_pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.05; done
  redis-cli -p "$port" ping > /dev/null || wp_die "redis-server did not start"
  redis_port[$name]=$port
done
export EPHPM_WP_REDIS_PORT=${redis_port[phpredis]} # read by each site's wp-config.php (WP_REDIS_PORT)
# redis_calls NAME REQUESTS: the commands NAME's server ran since the last
# call, per request: the total, then each command's (INFO commandstats,
# which counts the commands a script runs as well as the script).
redis_calls() {
  local port=${redis_port[$1]}
  redis-cli -p "$port" info commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$2" '
    /^cmdstat_/ && $1 !~ /^cmdstat_(info|config)/ { sub(/^cmdstat_/, "", $1); total += $3; each = each sprintf(" %s %.1f", $1, $3 / n) }
    END { printf "%.1f (%s)", total / n, substr(each, 2) }'
  redis-cli -p "$port" config resetstat > /dev/null
}

wp_start_mariadb "$wp_tmp/db"
wp_ini "$wp_tmp/cli.ini"
# One site per theme (tables t0_, t1_, ...), each with 10 posts; a
# document root per site and object cache, all on the same tables of its
# site.
themes=()
for theme in ${THEMES:-twentytwentythree twentytwentyone}; do
  if [ -d "$wp_src/wp-content/themes/$theme" ]; then themes+=("$theme"); else echo "bench: theme $theme is not installed: left out" >&2; fi
done
[ ${#themes[@]} -gt 0 ] || wp_die "no theme to measure"
for t in "${!themes[@]}"; do
  wp_site "$wp_tmp/t$t-none" "t${t}_" "t$t-none"
  wp_install "$wp_tmp/t$t-none" single "Measured" > /dev/null
  wp_install "$wp_tmp/t$t-none" posts 9 > /dev/null # 10 with "Hello world!"
  wp_install "$wp_tmp/t$t-none" theme "${themes[$t]}" > /dev/null
done

ext=$src/build/modules/ephpm.so
# phpredis and the serializers Debian built it with, when installed.
redis_ext=()
for e in igbinary msgpack redis; do [ -f "$wp_ext_dir/$e.so" ] && redis_ext+=("extension = $e"); done
declare -A ini=(
  [none]=""
  [apcu]="extension = apcu|apc.enabled = 1|apc.shm_size = 128M"
  [phpredis]="$(IFS='|'; echo "${redis_ext[*]}")"
  [ephpm-shm]="extension = $ext"
  [ephpm-redis]="extension = $ext|ephpm.kv_backend = \"redis://127.0.0.1:${redis_port[ephpm-redis]}\""
)
declare -A cache=(
  [apcu]=$src/bench/wordpress/object-cache-apcu.php
  [phpredis]=$src/bench/wordpress/object-cache-phpredis.php
  [ephpm-shm]=$dropin
  [ephpm-redis]=$dropin
)
names=(none apcu phpredis ephpm-shm ephpm-redis)
declare -A sock
for name in "${names[@]}"; do
  IFS='|' read -r -a lines <<< "${ini[$name]}"
  wp_ini "$wp_tmp/$name.ini" "${lines[@]}"
  wp_start_fpm "$wp_tmp/fpm-$name" "$workers" "$wp_tmp/$name.ini"
  sock[$name]=$wp_fpm_sock
  for t in "${!themes[@]}"; do
    root=$wp_tmp/t$t-$name
    [ "$name" = none ] || { wp_site "$root" "t${t}_" "t$t-$name"; wp_dropin "$root" "${cache[$name]}"; }
    mode=$(wp_get "$root" index.php "" / | wp_header X-WP-Cache)
    want=external; [ "$name" = none ] && want=runtime
    [ "$mode" = "$want" ] || wp_die "$name: the page's object cache is '$mode', not $want ($wp_tmp/php-errors.log: $(tail -3 "$wp_tmp/php-errors.log" 2>/dev/null))"
  done
done

echo "WordPress $wp_version; php-fpm pm=static, $workers workers per pool; $concurrency connections;" \
  "$requests requests per pool and round, $rounds rounds; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Build: $build"
echo "PHP $("$wp_php" -n -r 'echo PHP_VERSION;') with opcache; MariaDB $("$wp_mariadbd" --version | grep -o '[0-9][0-9.]*-MariaDB' | head -1);" \
  "$(redis-server --version | cut -d' ' -f1-3); APCu $(wp_cli "$wp_tmp/apcu.ini" -r 'echo phpversion("apcu");');" \
  "phpredis $(wp_cli "$wp_tmp/phpredis.ini" -r 'echo phpversion("redis") ?: "-";')"
go build -o "$wp_tmp/load" ./bench/wordpress/load
for t in "${!themes[@]}"; do
  targets=()
  for name in "${names[@]}"; do targets+=(-target "$name=${sock[$name]}:$wp_tmp/t$t-$name"); done
  echo
  echo "== The front page (10 posts) with the theme ${themes[$t]}"
  redis_calls phpredis 1 > /dev/null
  redis_calls ephpm-redis 1 > /dev/null
  "$wp_tmp/load" "${targets[@]}" -requests "$requests" -concurrency "$concurrency" -rounds "$rounds"
  # The load generator's requests: 100 to warm up, then the rounds'.
  sent=$((100 + requests * rounds))
  echo "Redis commands per request (INFO commandstats over $sent requests): phpredis $(redis_calls phpredis "$sent");" \
    "ephpm-redis $(redis_calls ephpm-redis "$sent")"
done
if [ -s "$wp_tmp/php-errors.log" ]; then
  echo "PHP's log: $(wc -l < "$wp_tmp/php-errors.log") lines, the first:"
  head -5 "$wp_tmp/php-errors.log"
fi
