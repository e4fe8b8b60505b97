#!/usr/bin/env bash
# Runs a command in a private copy of the phpt suite: run-tests.php writes
# each test's .php, .out, .diff (and under -m, .mem) files beside the
# .phpt, so two runs in one folder would overwrite each other's files. The
# copy holds phpt/ and examples/ (tests require ../../examples/lock.php),
# the command runs with the copy as its working directory (so "phpt" and
# "phpt/locks" name the copy's folders), and the copy is removed afterwards.
#
# Usage: phpt-copy.sh COMMAND [ARG...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -a "$src/phpt" "$src/examples" "$copy/"
cd "$copy"
"$@"
