#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine (as root): installs what is missing, checks
# formatting, builds (device code too when nvcc is found), runs every test. GPU tests report
# "skipped" on machines without a GPU. Then the runtime under AddressSanitizer (with
# UndefinedBehaviorSanitizer) and under ThreadSanitizer: a host-only build each and one test per
# runtime layer (tests/tools/sanitize.sh; RUN_ALL_SANITIZE=0 leaves them out). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
tests/tools/check_format.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j2 --timeout 300
if [[ ${RUN_ALL_SANITIZE:-1} != 0 ]]; then
  tests/tools/sanitize.sh address
  tests/tools/sanitize.sh thread
fi
