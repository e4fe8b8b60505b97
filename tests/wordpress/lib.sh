# Sourced by tests/wordpress/run.sh and bench/wordpress.sh: WordPress
# (Debian's package, /usr/share/wordpress) served by a php-fpm of its own
# from a MariaDB of its own, everything under one temporary directory.
#
# The sourcing script sets $wp_tmp (its mktemp directory) and $wp_fpm (the
# php-fpm binary), calls wp_init, and in its EXIT trap calls wp_stop_all,
# which stops every server these functions started, by PID, and removes
# the segments of their pools. Nothing is written outside $wp_tmp and
# /dev/shm/ephpm-fpm-<pool>.<uid>; Debian's /usr/share/wordpress and
# /etc/wordpress are only read.

wp_pids=()     # servers started, stopped in reverse order
wp_segments=() # shared-memory segments of the pools started

wp_die() { echo "wordpress: $*" >&2; exit 1; }

# The PHP of $wp_fpm: its version, its CLI, its extension directory.
wp_init() {
  wp_src=${EPHPM_WP_CORE:-/usr/share/wordpress}
  [ -f "$wp_src/wp-settings.php" ] || wp_die "no WordPress in $wp_src (Debian's wordpress package)"
  wp_php_version=$("$wp_fpm" -n -v | sed -n '1s/^PHP \([0-9]*\.[0-9]*\).*/\1/p')
  wp_php=$(command -v "php$wp_php_version" || command -v php) || wp_die "no PHP CLI"
  wp_ext_dir=$("$wp_php" -n -r 'echo PHP_EXTENSION_DIR;')
  wp_cgi_fcgi=$(command -v cgi-fcgi) || wp_die "no cgi-fcgi (libfcgi-bin)"
  wp_mariadbd=$(PATH=$PATH:/usr/sbin command -v mariadbd) || wp_die "no mariadbd (mariadb-server)"
  wp_version=$(sed -n "s/^\$wp_version = '\(.*\)';/\1/p" "$wp_src/wp-includes/version.php")
}

wp_stop_all() {
  local i p
  for ((i = ${#wp_pids[@]} - 1; i >= 0; i--)); do
    p=${wp_pids[$i]}
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  wp_pids=()
  for p in "${wp_segments[@]}"; do rm -f "$p" "$p.fences1"; done
}

# wp_stop PID: stops one server started here, and forgets it.
wp_stop() {
  local p keep=()
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${wp_pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  wp_pids=("${keep[@]}")
}

# wp_ini FILE [LINE...]: a php.ini with what WordPress needs from the
# extensions PHP has as modules (those built in need nothing), opcache on,
# then the given lines (extension=... of ephpm, APCu, phpredis, settings).
# PHP runs with it alone: PHP_INI_SCAN_DIR is empty wherever it is used, so
# Debian's conf.d (whatever it enables: apcu, redis) is never read.
wp_ini() {
  local file=$1 e
  shift
  {
    echo "memory_limit = 256M"
    echo "log_errors = On"
    echo "display_errors = Off"
    echo "error_log = $wp_tmp/php-errors.log"
    for e in mysqlnd mysqli ctype iconv mbstring tokenizer fileinfo xml dom simplexml xmlreader xmlwriter gd exif; do
      [ -f "$wp_ext_dir/$e.so" ] && echo "extension = $e"
    done
    [ -f "$wp_ext_dir/opcache.so" ] && printf 'zend_extension = opcache\nopcache.enable = 1\nopcache.memory_consumption = 128\n'
    for e in "$@"; do echo "$e"; done
  } > "$file"
}

# wp_cli INI SCRIPT [ARG...]: the PHP CLI with that ini alone.
wp_cli() {
  local ini=$1
  shift
  PHP_INI_SCAN_DIR= "$wp_php" -c "$ini" "$@"
}

# wp_start_mariadb DIR: a MariaDB server on a socket in DIR (no TCP port),
# with a database "wp"; sets wp_db_sock. The data directory starts empty:
# with --skip-grant-tables the server needs no system tables (which
# mariadb-install-db takes seconds to write), and any user, root
# without a password, may connect. Durability is off: the data is thrown
# away at the end (the --loose- options, which a release without them
# ignores).
wp_start_mariadb() {
  local dir=$1 i user=()
  mkdir -p "$dir/data"
  wp_db_sock=$dir/mysqld.sock
  [ "$(id -u)" = 0 ] && user=(--user=root)
  "$wp_mariadbd" --no-defaults "${user[@]}" --datadir="$dir/data" --socket="$wp_db_sock" \
    --skip-networking --skip-grant-tables --pid-file="$dir/mysqld.pid" --log-error="$dir/mysqld.log" \
    --skip-log-bin --max-connections=300 --innodb-buffer-pool-size=64M \
    --innodb-data-file-path=ibdata1:12M:autoextend --loose-innodb-log-file-size=16M \
    --loose-innodb-flush-log-at-trx-commit=0 --loose-innodb-flush-method=nosync \
    --loose-innodb-doublewrite=0 --loose-innodb-fast-shutdown=2 \
    --loose-innodb-buffer-pool-dump-at-shutdown=0 --loose-innodb-buffer-pool-load-at-startup=0 &
  wp_pids+=($!)
  wp_db_pid=$!
  for i in $(seq 3000); do # 300 s and more: a hang catch
    if wp_cli /dev/null -d extension=mysqlnd -d extension=mysqli -r '
        mysqli_report(MYSQLI_REPORT_OFF);
        $db = @mysqli_connect("localhost", "root", "", "", 0, $argv[1]);
        exit($db && $db->query("CREATE DATABASE IF NOT EXISTS wp CHARACTER SET utf8mb4") ? 0 : 1);' \
        "$wp_db_sock" 2>/dev/null; then
      return 0
    fi
    kill -0 "$wp_db_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$dir/mysqld.log" >&2
  wp_die "MariaDB did not start"
}

# wp_sql SQL: runs one statement on the database wp; prints the rows, tab-separated.
wp_sql() {
  wp_cli /dev/null -d extension=mysqlnd -d extension=mysqli -r '
    $db = mysqli_connect("localhost", "root", "", "wp", 0, $argv[1]);
    $r = $db->query($argv[2]);
    if ($r instanceof mysqli_result) { foreach ($r->fetch_all() as $row) { echo implode("\t", $row), "\n"; } }' \
    "$wp_db_sock" "$1"
}

# wp_site ROOT PREFIX SALT [MULTISITE]: a document root of its own: the
# top-level PHP files of Debian's WordPress copied (wp-load.php finds
# wp-config.php beside itself, by its real path: a symlink would lead to
# Debian's /etc/wordpress configuration), wp-admin and wp-includes linked,
# a wp-config.php and a wp-content of its own (themes linked, no plugins,
# the test's mu-plugin), tables PREFIX in the database wp, and
# WP_CACHE_KEY_SALT SALT. No object cache yet (wp_dropin adds one). With
# MULTISITE=1 its wp-config.php makes it a subdirectory network's main
# site (the network must have been installed: install.php network).
wp_site() {
  local root=$1 prefix=$2 salt=$3 multisite=${4:-0} f
  mkdir -p "$root/wp-content/mu-plugins" "$root/wp-content/plugins" "$root/wp-content/uploads"
  for f in "$wp_src"/*.php; do
    [ "$(basename "$f")" = wp-config.php ] || cp "$f" "$root/"
  done
  ln -sfn "$wp_src/wp-admin" "$root/wp-admin"
  ln -sfn "$wp_src/wp-includes" "$root/wp-includes"
  ln -sfn "$wp_src/wp-content/themes" "$root/wp-content/themes"
  cp "$wp_lib_dir/figures.php" "$root/wp-content/mu-plugins/ephpm-test-figures.php"
  cp "$wp_lib_dir/actions.php" "$root/ephpm-test.php"
  cat > "$root/wp-config.php" <<PHP
<?php
// Made by tests/wordpress/lib.sh for one test run.
// The worker's CPU time when the request reached WordPress's configuration
// (figures.php sends what the request used since).
\$GLOBALS['ephpm_test_rusage'] = getrusage();
define('DB_NAME', 'wp');
define('DB_USER', 'root');
define('DB_PASSWORD', '');
define('DB_HOST', 'localhost:$wp_db_sock');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
\$table_prefix = '$prefix';
define('WP_CACHE_KEY_SALT', '$salt');
define('WP_HOME', 'http://localhost');
define('WP_SITEURL', 'http://localhost');
define('WP_CONTENT_DIR', __DIR__ . '/wp-content');
foreach (['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY', 'AUTH_SALT', 'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'] as \$k) {
    define(\$k, 'ephpm-test-' . \$k);
}
// No cron spawned by page views, no update checks, no request leaves the host.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
// A request may ask for every query to be kept (\$wpdb->queries).
if (!empty(\$_GET['savequeries'])) {
    define('SAVEQUERIES', true);
}
// Where WP_REDIS_* point the phpredis baseline (bench/wordpress.sh).
if (getenv('EPHPM_WP_REDIS_PORT')) {
    define('WP_REDIS_HOST', '127.0.0.1');
    define('WP_REDIS_PORT', (int) getenv('EPHPM_WP_REDIS_PORT'));
}
PHP
  if [ "$multisite" = 1 ]; then
    cat >> "$root/wp-config.php" <<'PHP'
define('WP_ALLOW_MULTISITE', true);
define('MULTISITE', true);
define('SUBDOMAIN_INSTALL', false);
define('DOMAIN_CURRENT_SITE', 'localhost');
define('PATH_CURRENT_SITE', '/');
define('SITE_ID_CURRENT_SITE', 1);
define('BLOG_ID_CURRENT_SITE', 1);
PHP
  fi
  cat >> "$root/wp-config.php" <<'PHP'
defined('ABSPATH') || define('ABSPATH', __DIR__ . '/');
require_once ABSPATH . 'wp-settings.php';
PHP
}

# wp_dropin ROOT FILE: installs FILE as the site's object cache (a symlink).
wp_dropin() { ln -sfn "$2" "$1/wp-content/object-cache.php"; }

# wp_install ROOT single|network|add-site ARG...: tests/wordpress/install.php
# with the CLI (the site must have no object cache yet).
wp_install() { wp_cli "$wp_tmp/cli.ini" "$wp_lib_dir/install.php" "$@"; }

# wp_start_fpm DIR WORKERS INI: php-fpm with a pool of its own (pm=static,
# WORKERS workers, listening on DIR/fpm.sock) and that php.ini alone; sets
# wp_fpm_sock and wp_fpm_pid. As root the workers run as root (-R). The
# pool's name is new for each start, so that its default ephpm segment
# (/dev/shm/ephpm-fpm-POOL.UID) is new too; wp_stop_all removes it.
wp_start_fpm() {
  local dir=$1 workers=$2 ini=$3 pool i root=()
  mkdir -p "$dir"
  pool="wp$$x$RANDOM$RANDOM"
  wp_segments+=("/dev/shm/ephpm-fpm-$pool.$(id -u)")
  wp_fpm_sock=$dir/fpm.sock
  cat > "$dir/fpm.conf" <<CONF
[global]
error_log = $dir/fpm.log
daemonize = no
[$pool]
listen = $wp_fpm_sock
listen.backlog = 1024
pm = static
pm.max_children = $workers
catch_workers_output = yes
; a hang catch, not a speed bound
request_terminate_timeout = 600
clear_env = no
CONF
  [ "$(id -u)" = 0 ] && root=(-R)
  PHP_INI_SCAN_DIR= "$wp_fpm" -F "${root[@]}" -c "$ini" -y "$dir/fpm.conf" &
  wp_pids+=($!)
  wp_fpm_pid=$!
  for i in $(seq 2400); do # 120 s: a hang catch
    [ -S "$wp_fpm_sock" ] && return 0
    kill -0 "$wp_fpm_pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$dir/fpm.log" >&2
  wp_die "php-fpm did not start"
}

# wp_get ROOT SCRIPT [QUERY] [PATH]: one GET request for ROOT/SCRIPT through
# FastCGI on $wp_fpm_sock, as a web server would pass http://localhost/PATH
# (PATH defaults to /SCRIPT); prints the response, headers then body.
wp_get() {
  local root=$1 script=$2 query=${3:-} path=${4:-/$2}
  env -i SCRIPT_FILENAME="$root/$script" SCRIPT_NAME="/$script" DOCUMENT_ROOT="$root" \
    REQUEST_METHOD=GET QUERY_STRING="$query" REQUEST_URI="$path${query:+?$query}" \
    HTTP_HOST=localhost SERVER_NAME=localhost SERVER_PORT=80 SERVER_PROTOCOL=HTTP/1.1 \
    REMOTE_ADDR=127.0.0.1 GATEWAY_INTERFACE=CGI/1.1 \
    timeout 900 "$wp_cgi_fcgi" -bind -connect "$wp_fpm_sock"
}

# wp_header NAME < RESPONSE: the value of a response header. (It reads
# the whole response: a reader that stops early would have the writer of a
# pipe killed by SIGPIPE, and under pipefail the pipe fail.)
wp_header() { awk -v h="$(tr '[:upper:]' '[:lower:]' <<< "$1"):" '
  /^\r?$/ { done = 1 }
  !done && tolower($1) == h && !found { sub(/^[^:]*: */, ""); sub(/\r$/, ""); print; found = 1 }'; }

# wp_body < RESPONSE: the body.
wp_body() { sed '1,/^\r\?$/d'; }
