#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine (as root): installs what is missing, checks
# formatting, builds (device code too when nvcc is found), runs every test. GPU tests report
# "skipped" on machines without a GPU. Then the runtime under AddressSanitizer (with
# UndefinedBehaviorSanitizer) and under ThreadSanitizer: a host-only build each and one test per
# runtime layer (tests/tools/sanitize.sh; RUN_ALL_SANITIZE=0 leaves them out). clang-tidy
# (tests/tools/clang_tidy.sh: every check of .clang-tidy with clang-tidy 22; an older clang-tidy
# leaves out performance-unnecessary-value-param, which it runs too slowly) runs at low priority
# while ctest runs (mostly processes waiting on each other); any finding fails the run
# (RUN_ALL_TIDY=0 leaves it out). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
tests/tools/check_format.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
if [[ ${RUN_ALL_TIDY:-1} != 0 ]]; then
  nice -n 10 tests/tools/clang_tidy.sh build >build/clang-tidy.log 2>&1 &
  tidy=$!
fi
ctest_status=0
ctest --test-dir build --output-on-failure -j2 --timeout 300 2>&1 | tee build/ctest.log ||
  ctest_status=$?
if ((ctest_status != 0)); then
  # The failed tests' output again, together at the end, where a log cut to its tail still shows
  # it (with -j2 it lies between other tests' lines above).
  echo "== output of the failed tests"
  awk '/\*\*\*(Failed|Timeout|Exception)|\(Failed\)|\(Timeout\)/ && /Test +#/ {show = 1; print; next}
       /^ *Start +[0-9]+:|^[0-9]+\/[0-9]+ Test +#/ {show = 0}
       show' build/ctest.log
fi
if [[ -v tidy ]]; then
  tidy_status=0
  wait "$tidy" || tidy_status=$?
  cat build/clang-tidy.log
  ((tidy_status == 0)) || exit "$tidy_status"
fi
((ctest_status == 0)) || exit "$ctest_status"
if [[ ${RUN_ALL_SANITIZE:-1} != 0 ]]; then
  tests/tools/sanitize.sh address
  tests/tools/sanitize.sh thread
fi
