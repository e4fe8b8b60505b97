#!/usr/bin/env bash
# The main job: installs and builds what is missing, then serves examples/
# with PHP's built-in web server, the ephpm extension loaded on the embedded
# in-process store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo
addr=${EPHPM_DEMO_ADDR:-127.0.0.1:8131}
echo "ephpm demo on http://$addr/"
echo "  curl -s http://$addr/lock.php?release=del"
echo "  curl -s http://$addr/lock.php?release=del_if_eq"
exec php -d "extension=$PWD/build/modules/ephpm.so" -S "$addr" -t examples
