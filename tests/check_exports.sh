#!/usr/bin/env bash
# The provider library must export exactly one symbol, the table getter,
# and carry a SONAME (see bridge/exports.map).
set -euo pipefail
lib=$1
exported=$(readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $5 != "LOCAL" && $8 != "" && NR > 3 {print $8}' | sort -u)
echo "exported: $exported"
[ "$exported" = "ephpm_kv_get_ops" ] || { echo "FAIL: expected only ephpm_kv_get_ops"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libephpm.so\]' || { echo "FAIL: no SONAME libephpm.so"; exit 1; }
echo "1 passed, 0 failed"
