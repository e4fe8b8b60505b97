#!/usr/bin/env bash
# Every test: installs and builds what is missing, then runs the Go tests
# (with the race detector), the C table tests, the library's export check,
# the phpt suite under PHP's run-tests.php, and the php-fpm process test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
export PATH=$PATH:/usr/local/go/bin
export GOTOOLCHAIN=auto  # build with the Go release go.mod names (fetched if older here)
ctest --test-dir build --output-on-failure
