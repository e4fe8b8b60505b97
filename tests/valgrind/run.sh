#!/usr/bin/env bash
# The whole phpt suite under valgrind's memcheck (run-tests.php -m): no
# error and no leak attributable to the extension. The Go library is built
# without DWARF for this run (valgrind 3.19 cannot read Go's DWARF 5), and
# tests/valgrind/go-runtime.supp hides what the Go runtime does on purpose.
#
# Usage: tests/valgrind/run.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
out="$build/valgrind"
mkdir -p "$out"
"$src/scripts/build-library.sh" "$out/libephpm.so" -w
cp "$build/modules/ephpm.so" "$out/"
mkdir -p "$out/test" && cp "$build"/modules/test/*.so "$out/test/"

cd "$src"
export VALGRIND_OPTS="--suppressions=$here/go-runtime.supp"
log=$(mktemp)
NO_INTERACTION=1 TEST_PHP_EXECUTABLE=$(command -v php) \
  php "$(php-config --extension-dir)/build/run-tests.php" -q -n -m -d "extension=$out/ephpm.so" \
      -d pcre.jit=0 phpt | tee "$log"   # PCRE's JIT code reads past buffers on purpose
# run-tests.php exits 0 when tests only leak: a leak fails this run.
if grep -q 'LEAKED TEST SUMMARY' "$log"; then
  for f in phpt/*/*.mem; do echo "== $f"; cat "$f"; done
  exit 1
fi
