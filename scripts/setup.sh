#!/usr/bin/env bash
# Installs what ephpm needs on Debian (when something is missing) and builds
# the Go library and the PHP extension into build/modules.
#
# Usage: scripts/setup.sh demo|test
#   demo  what the demo server needs: PHP CLI and headers, a C toolchain, cmake
#   test  also what the tests need: php-fpm, php-cgi, Apache with mod_php,
#         the FastCGI client, Redis, python3-redis (a second RESP client for
#         tests/cli_resp.sh), and Debian's packaging tools and lintian (the
#         Debian package's test)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-test}

packages=(ca-certificates php8.2-cli php8.2-dev cmake gcc make)
if [ "$profile" = test ]; then
  packages+=(php8.2-fpm libfcgi-bin libphp8.2-embed redis-server redis-tools curl valgrind
             phpunit php-symfony-lock php-illuminate-cache php-psr-simple-cache php8.2-xml chromium debootstrap
             php8.2-cgi libapache2-mod-php8.2 python3-redis
             build-essential dpkg-dev debhelper dh-php lintian)
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

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

go mod download
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
