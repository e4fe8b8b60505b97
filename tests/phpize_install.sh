#!/usr/bin/env bash
# The usual way to build and install a PHP extension works: phpize,
# ./configure --enable-ephpm, make, make install. The Go library is built
# and installed beside ephpm.so, where the extension finds it by itself.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy of the sources, so the build leaves the working tree alone.
(cd "$src" && tar --exclude=./build --exclude=./.git -cf - .) | (mkdir "$tmp/src" && cd "$tmp/src" && tar -xf -)
cd "$tmp/src/php-ext"
phpize > "$tmp/phpize.log"
./configure --enable-ephpm > "$tmp/configure.log"
make -j "$(nproc)" > "$tmp/make.log" 2>&1 || { tail -30 "$tmp/make.log"; exit 1; }
make install INSTALL_ROOT="$tmp/root" > "$tmp/install.log" 2>&1 || { tail -30 "$tmp/install.log"; exit 1; }
extdir="$tmp/root$(php-config --extension-dir)"
ls -l "$extdir"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }
check "ephpm.so installed" '[ -f "$extdir/ephpm.so" ]'
check "libephpm.so installed beside it" '[ -f "$extdir/libephpm.so" ]'
out=$(php -n -d "extension=$extdir/ephpm.so" -r 'var_dump(ephpm_kv_setnx("k", "v", 5), ephpm_kv_stats()["library"]);')
check "the installed extension finds its library by itself ($out)" 'grep -q "$extdir/libephpm.so" <<< "$out" && grep -q "bool(true)" <<< "$out"'
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
