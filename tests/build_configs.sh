#!/usr/bin/env bash
# The extension builds, with the project's warnings as errors (-Wall
# -Wextra -Werror), in every configuration a packager uses, and each build
# loads and answers: CMake with no build type (which must optimise: -O2, as
# phpize does), Release (-O3), RelWithDebInfo, Debug, and phpize with the
# CFLAGS PHP itself was built with (php-config --configure-options: -O2
# -pedantic ...) and _FORTIFY_SOURCE, as distributions build extensions.
#
# Only the extension is built here: the Go library of BUILD_DIR/modules is
# copied beside each ephpm.so, and the CMake trees stay in
# BUILD_DIR/configs, so that a second run recompiles only what changed.
#
# Usage: tests/build_configs.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
lib="$build/modules/libephpm.so"
out="$build/configs"
mkdir -p "$out"
[ -f "$lib" ] || { echo "no $lib: build BUILD_DIR first"; exit 1; }
jobs=$(nproc)

passed=0 failed=0
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# check NAME DIR: DIR/ephpm.so, with the library copied beside it, is
# listed by php -m and stores and reads a key.
check() {
  local name=$1 dir=$2
  cp "$lib" "$dir/libephpm.so"
  # (grep reads to the end: with -q, php could die of SIGPIPE first)
  if ! php -n -d "extension=$dir/ephpm.so" -m | grep -x ephpm > /dev/null; then
    fail "$name: php -m does not list ephpm"; return
  fi
  local got
  got=$(php -n -d "extension=$dir/ephpm.so" -r 'var_dump(ephpm_kv_set("k", "v", 5) && ephpm_kv_get("k") === "v");' 2>&1)
  [ "$got" = "bool(true)" ] || { fail "$name: set and get: $got"; return; }
  passed=$((passed + 1))
}

# CMake, one tree per build type ("default": none given). ephpm/fast is the
# extension's own rule without its dependencies (the Go library's build).
for cfg in default Release RelWithDebInfo Debug; do
  dir="$out/$cfg"
  type=(); [ "$cfg" = default ] || type=(-DCMAKE_BUILD_TYPE="$cfg")
  start=$SECONDS
  if ! env -u CFLAGS cmake -S "$src" -B "$dir" -G "Unix Makefiles" "${type[@]}" > "$dir.log" 2>&1 ||
     ! make -C "$dir" -j "$jobs" ephpm/fast >> "$dir.log" 2>&1; then
    grep -E 'error|Error' "$dir.log" | head -20; fail "$cfg: cmake build"; continue
  fi
  flags=$(sed -n 's/^C_FLAGS = //p' "$dir/CMakeFiles/ephpm.dir/flags.make")
  echo "== $cfg ($((SECONDS - start)) s): $(grep -o -- ' -O[0-3s]\| -g\b\| -DNDEBUG' <<< " $flags" | tr -d '\n')"
  # Every build but Debug is optimised; the default one at -O2.
  case $cfg in
    default) grep -q -- ' -O2' <<< " $flags" || { fail "$cfg: not built at -O2: $flags"; continue; } ;;
    Debug) ;;
    *) grep -q -- ' -O[1-3s]' <<< " $flags" || { fail "$cfg: not optimised: $flags"; continue; } ;;
  esac
  check "$cfg" "$dir/modules"
done

# phpize, in a copy of the extension's sources and the ABI header (the
# Makefile's rule for the Go library then has no sources, and the copied
# library stands for it).
start=$SECONDS
dir="$out/phpize"
rm -rf "$dir" && mkdir -p "$dir"
cp -r "$src/php-ext" "$src/include" "$dir/"
php_cflags=$(php-config --configure-options | sed -n 's/.*CFLAGS=//p')
[ -n "$php_cflags" ] || php_cflags="-g -O2"
(
  cd "$dir/php-ext"
  rm -rf modules .libs && mkdir modules && cp "$lib" modules/libephpm.so
  phpize > ../phpize.log 2>&1
  ./configure --enable-ephpm CFLAGS="$php_cflags" CPPFLAGS=-D_FORTIFY_SOURCE=2 > ../configure.log 2>&1
  make -j "$jobs" EXTRA_CFLAGS="-Wextra -Wno-unused-parameter -Werror" > ../make.log 2>&1 || { grep -E 'error|Error' ../make.log | head -20; exit 1; }
) || fail "phpize: build"
if [ -f "$dir/php-ext/modules/ephpm.so" ]; then
  echo "== phpize ($((SECONDS - start)) s): CFLAGS=$php_cflags CPPFLAGS=-D_FORTIFY_SOURCE=2 -Wextra -Wno-unused-parameter -Werror"
  check phpize "$dir/php-ext/modules"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
