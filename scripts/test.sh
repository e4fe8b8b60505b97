#!/usr/bin/env bash
# Every test: installs and builds what is missing, then runs, through ctest,
# the Go tests (with the race detector), the C table tests, the export
# checks, the phpt suite under PHP's run-tests.php on the in-process store,
# on Redis and on a Redis Cluster, the process tests (php-fpm, php -S,
# signals), sanitizers, valgrind, the framework adapters, the status page,
# and the same suites on PHP 8.4 with Valkey 9 and Redis 8 in a Debian
# unstable chroot (tests/matrix/debian.sh; made once, then reused).
# The entries run several at once, the longest first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
. scripts/go-env.sh
# Several entries at once (at least two): each entry keeps its files,
# segments, servers and ports to itself.
jobs=$(nproc); [ "$jobs" -ge 2 ] || jobs=2
ctest --test-dir build --output-on-failure --parallel "$jobs"
