#!/bin/bash
# Issue 21 item 2: every variable is read through the configuration table (runtime/common/config.hpp),
# whose one getenv is in runtime/common/config.cpp; no other source of the library, its plugins,
# the device library or the launcher calls getenv itself (values reach plugins in their init args).
#   one_getenv.sh SOURCE_DIR
set -euo pipefail
src=$1
hits=$(cd "$src" && grep -rnE '\b(secure_)?getenv[[:space:]]*\(' runtime launcher device include \
         --include='*.c' --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.cu' \
         --include='*.cuh' | grep -v '^runtime/common/config\.cpp:' || true)
if [[ -n $hits ]]; then
  echo "getenv outside runtime/common/config.cpp (read the variable through the configuration" \
    "table, runtime/common/env.hpp, and pass plugins their values in their init args):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "one getenv: runtime/common/config.cpp"
