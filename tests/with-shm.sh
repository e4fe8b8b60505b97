#!/usr/bin/env bash
# Runs a command on a shared-memory segment of its own, and removes the
# segment's files afterwards. The backend ("shm://NAME") is in
# $EPHPM_TEST_BACKEND, and any argument "@BACKEND@" of the command is
# replaced by it.
#
# Usage: with-shm.sh COMMAND [ARG...]
set -euo pipefail
name=test-$$
files=(/dev/shm/ephpm-$name.$(id -u) /dev/shm/ephpm-$name.$(id -u).fences1)
trap 'rm -f "${files[@]}"' EXIT
backend=shm://$name
export EPHPM_TEST_BACKEND=$backend
args=()
for a in "$@"; do args+=("${a//@BACKEND@/$backend}"); done
"${args[@]}"
