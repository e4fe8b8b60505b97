#!/usr/bin/env bash
# The part of tests/matrix/debian.sh that runs inside the chroot: builds
# ephpm against the chroot's PHP into /build, then runs the suites on the
# in-process store once and the Redis backend's on each server.
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
run "PHP $(php -r 'echo PHP_VERSION;'), in-process store: C table, phpt, adapters" \
  ctest --test-dir /build -R '^(c-table|phpt|php-adapters)$' --output-on-failure
for server in valkey-server redis-server; do
  export EPHPM_REDIS_SERVER=$server EPHPM_REDIS_CLI=${server%-server}-cli
  version=$($server --version | grep -o 'v=[0-9.]*')
  run "$server $version: phpt, Cluster subset, adapters" \
    ctest --test-dir /build -R '^(phpt-redis|phpt-redis-cluster|php-adapters-redis)$' --output-on-failure
  run "$server $version: Go contract and Redis suites" \
    bash -c 'cd /src && go test -count=1 -buildvcs=false ./redisstore ./backend/...'
done
echo "matrix: $failed suite(s) failed"
[ "$failed" = 0 ]
