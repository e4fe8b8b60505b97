#!/usr/bin/env bash
# debian/copyright names the copyright and license of every Go module linked
# into libephpm.so (go version -m lists them): a module added to go.mod, or
# a new one it pulls in, fails the package's build until its paragraph
# ("Files: MODULE/*") is written.
#
# Usage: tests/check_copyright.sh LIBEPHPM_SO COPYRIGHT_FILE
set -euo pipefail
lib=$1 copyright=$2
. "$(dirname "$0")/../scripts/go-env.sh"
modules=$(go version -m "$lib" | awk '$1 == "dep" { print $2 }')
[ -n "$modules" ] || { echo "check_copyright: go version -m lists no module in $lib"; exit 1; }
missing=0
for m in $modules; do
  grep -qxF "Files: $m/*" "$copyright" || { echo "FAIL: $copyright has no paragraph for $m (Files: $m/*)"; missing=$((missing + 1)); }
done
[ "$missing" = 0 ] || exit 1
echo "ok: $copyright covers the $(wc -w <<< "$modules") Go modules linked into $(basename "$lib")"
