#!/usr/bin/env bash
# The part of tests/matrix/debian.sh that runs inside the chroot: builds
# ephpm against the chroot's PHP into /build, then runs the suites on the
# in-process store once (and the adapters on a shared-memory segment too),
# the wordpress entry, and the Redis backend's suites on the chroot's servers.
#
# sid runs every Redis suite on both its servers (Valkey 9, Redis 8.0). trixie
# runs them on its Valkey 8.1 only, without the Cluster subset: its Redis is
# sid's 8.0 line, and the Cluster code does not differ between server
# versions, so running them there again would repeat sid's runs.
set -euo pipefail
. /src/scripts/go-env.sh
cmake -S /src -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /build.log 2>&1 || { cat /build.log; exit 1; }
cmake --build /build -j "$(nproc)" >> /build.log 2>&1 || { tail -40 /build.log; exit 1; }

failed=0
run() { # run LABEL COMMAND...: a suite, whose failure fails the matrix
  echo "== $1"
  shift
  if ! "$@"; then failed=$((failed + 1)); fi
}
run "PHP $(php -r 'echo PHP_VERSION;'), in-process store: C table, phpt, adapters; adapters on a segment" \
  ctest --test-dir /build -R '^(c-table|phpt|php-adapters|php-adapters-shm)$' --output-on-failure
# WordPress on the drop-in, php-fpm and MariaDB of this release, on the
# pool's segment and on redis-server (tests/wordpress/run.sh).
run "WordPress $(sed -n "s/^\$wp_version = '\(.*\)';/\1/p" /usr/share/wordpress/wp-includes/version.php), php-fpm $(php -r 'echo PHP_VERSION;'), $(mariadbd --version | grep -o '[0-9][0-9.]*-MariaDB' | head -1): wordpress" \
  ctest --test-dir /build -R '^wordpress$' --no-tests=error -V
servers="valkey-server redis-server" redis_suites='phpt-redis|phpt-redis-cluster|php-adapters-redis'
if [ "${EPHPM_MATRIX_SUITE:-sid}" = trixie ]; then
  servers=valkey-server redis_suites='phpt-redis|php-adapters-redis'
fi
for server in $servers; do
  export EPHPM_REDIS_SERVER=$server EPHPM_REDIS_CLI=${server%-server}-cli
  version=$($server --version | grep -o 'v=[0-9.]*')
  run "$server $version: ${redis_suites//|/, }" \
    ctest --test-dir /build -R "^($redis_suites)\$" --output-on-failure
  run "$server $version: Go contract and Redis suites" \
    bash -c 'cd /src && go test -count=1 -timeout 30m -buildvcs=false ./redisstore ./backend/...' # -timeout: a hang catch
done
echo "matrix: $failed suite(s) failed"
[ "$failed" = 0 ]
