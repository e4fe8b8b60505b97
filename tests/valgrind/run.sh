#!/usr/bin/env bash
# The whole phpt suite under valgrind's memcheck (run-tests.php -m): no
# error and no leak attributable to the extension. The Go library is built
# without DWARF for this run (valgrind 3.19 cannot read Go's DWARF 5), and
# tests/valgrind/go-runtime.supp hides what the Go runtime does on purpose.
# The tests run one per CPU at once (-j): memcheck runs a process on one
# CPU, and each test's store, segment and servers are its own.
#
# Usage: tests/valgrind/run.sh BUILD_DIR   (BUILD_DIR/run-tests.php is
# run-tests.php without its retry, CMakeLists.txt)
# The phpt suite is the one in the working directory (ctest runs the script
# in a copy of its own: tests/phpt-copy.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
out="$build/valgrind"
mkdir -p "$out"
"$src/scripts/build-library.sh" "$out/libephpm.so" -w
cp "$build/modules/ephpm.so" "$out/"
mkdir -p "$out/test" && cp "$build"/modules/test/*.so "$out/test/"

export VALGRIND_OPTS="--suppressions=$here/go-runtime.supp"
# Go's runtime reads the CPU's time stamp with RDTSCP where CPUID offers
# it, and valgrind 3.19 passes CPUID through on some hosts (an AMD EPYC VM)
# without decoding RDTSCP: the process dies of SIGILL in runtime.cputicks.
# cpu.all=off turns the optional instructions off in Go's runtime (and,
# unlike cpu.rdtscp=off, gives golang.org/x/sys/cpu no option to warn about
# on stderr, which the tests read).
export GODEBUG="${GODEBUG:+$GODEBUG,}cpu.all=off"
log=$(mktemp)
status=0
NO_INTERACTION=1 TEST_PHP_EXECUTABLE=$(command -v php) \
  php "$build/run-tests.php" -q -n -m -j"$(nproc)" -d "extension=$out/ephpm.so" \
      -d pcre.jit=0 --show-diff phpt | tee "$log" || status=$? # PCRE's JIT code reads past buffers on purpose
# run-tests.php exits 1 when a test failed, borked or leaked. A failed or
# borked test fails this run; so does a leak, unless every error of the
# test is a Go system call's parameter (memcheck matches Param suppressions
# by the exact parameter name, a list no file can keep: read(buf),
# openat(filename), socketcall.connect(serv_addr.sin_port)...), the one kind
# go-runtime.supp cannot hold.
# Every leak report is looked at (and printed) before the verdict, so that
# a failed test's run still says what memcheck saw.
failed=0
if grep -q 'FAILED TEST SUMMARY\|BORKED TEST SUMMARY' "$log"; then
  failed=1
fi
if grep -q 'LEAKED TEST SUMMARY' "$log"; then
  for f in phpt/*/*.mem; do
    [ -f "$f" ] || continue
    errors=$(grep -c 'Syscall param\|Invalid\|uninitialised\|definitely lost\|possibly lost\|Mismatched\|Source and destination' "$f" || true)
    go_params=$(grep -A1 'Syscall param' "$f" | grep -c 'at 0x[0-9A-F]*: .* (in .*/libephpm\.so)' || true)
    if [ "$errors" -gt 0 ] && [ "$errors" = "$go_params" ]; then
      echo "== $f: only Go system call parameters ($go_params), as go-runtime.supp intends"
    else
      echo "== $f"; cat "$f"; failed=1
    fi
  done
fi
[ "$failed" = 0 ] || exit 1
if [ "$status" != 0 ] && ! grep -q 'LEAKED TEST SUMMARY' "$log"; then
  exit "$status"
fi
