#!/usr/bin/env bash
# Installs what ephpm needs on Debian (when something is missing) and builds
# the Go library and the PHP extension into build/modules.
#
# Usage: scripts/setup.sh demo|test
#   demo  what the demo server needs: PHP CLI and headers, a C toolchain, cmake
#   test  also what the tests need: php-fpm, php-cgi, Apache with mod_php,
#         the FastCGI client, Redis, python3-redis (a second RESP client for
#         tests/cli_resp.sh), Debian's packaging tools and lintian (the
#         Debian package's test), and WordPress with MariaDB (the wordpress
#         entry, tests/wordpress/run.sh) and APCu and phpredis (its
#         benchmark's baselines, bench/wordpress.sh)
#
# No service is started by the install: the tests start the servers they
# need themselves and stop them by PID (a package's postinst asks
# /usr/sbin/policy-rc.d, which this script provides for the install when the
# machine has none).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-test}

packages=(ca-certificates php8.2-cli php8.2-dev cmake gcc make)
if [ "$profile" = test ]; then
  packages+=(php8.2-fpm libfcgi-bin libphp8.2-embed redis-server redis-tools curl valgrind
             phpunit php-symfony-lock php-illuminate-cache php-psr-simple-cache php8.2-xml chromium debootstrap
             php8.2-cgi libapache2-mod-php8.2 python3-redis procps
             build-essential dpkg-dev debhelper dh-php lintian
             wordpress wordpress-theme-twentytwentythree wordpress-theme-twentytwentyone mariadb-server php8.2-mysql
             php8.2-apcu php8.2-redis)
fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "setup: need root (or sudo) to run: $*" >&2; exit 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Go: the official toolchain if present, else Debian's (it must be 1.21 or
# later to fetch the release go.mod names).
. scripts/go-env.sh
command -v go >/dev/null || missing+=(golang-go)

# The servers among the packages (MariaDB, Redis, Apache, php-fpm) running
# as daemons (their parent init), before the install: one that runs after it
# and did not before was started by a package's postinst, and is reported
# (the tests' own servers are their scripts' children, never init's).
# (Read from /proc: a minimal Debian has no ps before procps is installed.)
daemons() {
  local d
  for d in /proc/[0-9]*; do
    case $(cat "$d/comm" 2>/dev/null) in
      mariadbd|mysqld|mysqld_safe|redis-server|apache2|php-fpm8.2)
        # The parent is stat's 4th field (these names hold no space).
        [ "$(cut -d' ' -f4 "$d/stat" 2>/dev/null)" = 1 ] && echo "${d#/proc/}" ;;
    esac
  done
  return 0
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  before=" $(daemons | tr '\n' ' ')"
  # Debian's postinst scripts start a package's service unless
  # policy-rc.d answers 101 ("action forbidden"). A policy-rc.d already
  # there (a container's) is the machine's and is left as it is.
  policy=/usr/sbin/policy-rc.d made_policy=
  if ! as_root test -e "$policy"; then
    as_root sh -c "printf '#!/bin/sh\\n# made by ephpm scripts/setup.sh for its install\\nexit 101\\n' > $policy && chmod 755 $policy"
    made_policy=1
    trap 'as_root rm -f "$policy"' EXIT
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ -n "$made_policy" ]; then as_root rm -f "$policy"; trap - EXIT; fi
  started=()
  for pid in $(daemons); do
    [[ "$before" == *" $pid "* ]] || started+=("$pid ($(cat "/proc/$pid/comm" 2>/dev/null))")
  done
  if [ ${#started[@]} -gt 0 ]; then
    echo "setup: warning: the install started servers, which the tests do not need (they start their own): ${started[*]}" >&2
  fi
fi

go mod download
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
