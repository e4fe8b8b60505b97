#!/usr/bin/env bash
# A shared object must export exactly one symbol: the provider library its
# table getter (see bridge/exports.map, and it carries a SONAME), the
# extension PHP's get_module (everything else is built hidden, so nothing
# clashes with another module's names and internal calls skip the PLT).
#
# Usage: check_exports.sh LIB SYMBOL [SONAME]
set -euo pipefail
lib=$1 symbol=$2 soname=${3:-}
exported=$(readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $5 != "LOCAL" && $8 != "" && NR > 3 {print $8}' | sort -u)
echo "$lib exports: $(echo $exported)"
[ "$exported" = "$symbol" ] || { echo "FAIL: expected only $symbol"; exit 1; }
if [ -n "$soname" ]; then
  readelf -d "$lib" | grep -q "SONAME.*\[$soname\]" || { echo "FAIL: no SONAME $soname"; exit 1; }
fi
echo "1 passed, 0 failed"
