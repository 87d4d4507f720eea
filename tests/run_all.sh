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
#
# Two CPUs (CI's machine) are kept busy: after clang-tidy the two sanitizer trees build at the
# lowest priority, beside the rest of ctest and beside reliability.script, which runs alone among
# the tests (its time limits are judged against a machine without other tests) and mostly waits.
# The sanitizers' tests run once their trees are built and the other tests are done.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
tests/tools/check_format.sh
# Ninja where it is installed (install_deps.sh installs it), unless build/ already exists.
generator=()
[[ ! -e build/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
# -g1 (line tables only: file:line in every backtrace and sanitizer report) instead of -g: the
# C++ objects build in about 20% less time, and CI's two CPUs are the limit.
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build build -j"$(nproc)"
sanitize=${RUN_ALL_SANITIZE:-1}
rm -f build/clang-tidy.status build/sanitize-build.status
# Beside ctest: clang-tidy, then the sanitizer trees (statuses in files: this is one job).
(
  if [[ ${RUN_ALL_TIDY:-1} != 0 ]]; then
    st=0
    nice -n 10 tests/tools/clang_tidy.sh build >build/clang-tidy.log 2>&1 || st=$?
    echo "$st" >build/clang-tidy.status
  fi
  if [[ $sanitize != 0 ]]; then
    st=0
    { nice -n 19 tests/tools/sanitize.sh address --build &&
      nice -n 19 tests/tools/sanitize.sh thread --build; } >build/sanitize-build.log 2>&1 || st=$?
    echo "$st" >build/sanitize-build.status
  fi
) &
beside=$!
ctest_status=0
ctest --test-dir build --output-on-failure -j2 --timeout 300 -E '^reliability\.script$' 2>&1 |
  tee build/ctest.log || ctest_status=$?
ctest --test-dir build --output-on-failure --timeout 300 -R '^reliability\.script$' 2>&1 |
  tee -a build/ctest.log || ctest_status=$?
if ((ctest_status != 0)); then
  # The failed tests' output again, together at the end, where a log cut to its tail still shows
  # it (with -j2 it lies between other tests' lines above).
  echo "== output of the failed tests"
  awk '/\*\*\*(Failed|Timeout|Exception)|\(Failed\)|\(Timeout\)/ && /Test +#/ {show = 1; print; next}
       /^ *Start +[0-9]+:|^[0-9]+\/[0-9]+ Test +#/ {show = 0}
       show' build/ctest.log
fi
wait "$beside"
if [[ -e build/clang-tidy.status ]]; then
  cat build/clang-tidy.log
  tidy_status=$(<build/clang-tidy.status)
  ((tidy_status == 0)) || exit "$tidy_status"
fi
((ctest_status == 0)) || exit "$ctest_status"
if [[ $sanitize != 0 ]]; then
  build_status=$(<build/sanitize-build.status)
  if ((build_status != 0)); then
    cat build/sanitize-build.log
    exit "$build_status"
  fi
  tests/tools/sanitize.sh address --test
  tests/tools/sanitize.sh thread --test
fi
