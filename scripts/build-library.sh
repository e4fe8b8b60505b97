#!/usr/bin/env bash
# Builds the Go provider library, libephpm.so, from this tree: the one
# recipe CMake, phpize's Makefile.frag and the valgrind run use. The linker
# version script leaves ephpm_kv_get_ops the only exported symbol; the
# SONAME is libephpm.so.
#
# Usage: scripts/build-library.sh OUTPUT [EXTRA_LDFLAGS]
#   EXTRA_LDFLAGS  go linker flags put before -extldflags (valgrind: -w)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$1
extra=${2:-}
. "$src/scripts/go-env.sh"
cd "$src"
CGO_ENABLED=1 go build -trimpath -buildvcs=false -buildmode=c-shared \
  "-ldflags=$extra -extldflags=-Wl,--version-script=$src/bridge/exports.map,-soname,libephpm.so" \
  -o "$out" ./cmd/libephpm
rm -f "${out%.so}.h" # cgo's header of the exports; include/ephpm_kv.h is the contract
