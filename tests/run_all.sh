#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine (as root): installs what is missing, checks
# formatting, builds (device code too when nvcc is found), runs every test. GPU tests report
# "skipped" on machines without a GPU. Then the runtime under AddressSanitizer (with
# UndefinedBehaviorSanitizer) and under ThreadSanitizer: a host-only build each (with Clang 22 where
# install_deps.sh could install it) and one test per runtime layer (tests/tools/sanitize.sh;
# RUN_ALL_SANITIZE=0 leaves them out). clang-tidy
# (tests/tools/clang_tidy.sh: every check of .clang-tidy with clang-tidy 22; an older clang-tidy
# leaves out performance-unnecessary-value-param, which it runs too slowly) runs at low priority
# while ctest runs (mostly processes waiting on each other); any finding fails the run
# (RUN_ALL_TIDY=0 leaves it out). CI runs exactly this.
#
# Two CPUs (CI's machine) are kept busy: after clang-tidy the two sanitizer trees build at the
# lowest priority, beside the rest of ctest and beside reliability.script, which runs alone among
# the tests (its time limits are judged against a machine without other tests) and mostly waits.
# Each sanitizer's tests run once its tree is built and the other tests are done (the ASan tests
# beside the TSan tree's build).
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
tests/tools/check_format.sh
# Ninja where it is installed (install_deps.sh installs it), unless build/ already exists.
generator=()
[[ ! -e build/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
# -g1 (line tables only: file:line in every backtrace and sanitizer report) instead of -g: the
# C++ objects build in about 20% less time, and CI's two CPUs are the limit.
# nvcc: line tables for the host code as well (nvcc's -g is the host compiler's full -g). Where
# this machine has no usable GPU (CI; gpu_or_skip.sh decides, as for the GPU tests), the device
# code is compiled to be checked, never run: the device optimizers at a lower level (cicc -O1,
# ptxas -O0; every kernel still goes through both to sm_90 machine code), a fifth less CPU for the
# .cu files (480 -> 400 s here). The tests that judge generated code (unit.device_loops_ptx,
# unit.multimem_ptx, unit.register_budget_*) compile their own at full optimization. The test
# programs' own host code builds at -O0 (VSHMEM_TEST_PROGRAMS_O0, tests/CMakeLists.txt); the
# runtime, the benchmarks and the examples keep -O2.
cuda_flags="-O2 -Xcompiler=-g1 -DNDEBUG"
tests/tools/gpu_or_skip.sh true >/dev/null || cuda_flags+=" -Xcicc -O1 -Xptxas -O0"
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="$cuda_flags" -DVSHMEM_TEST_PROGRAMS_O0=ON
cmake --build build -j"$(nproc)"
sanitize=${RUN_ALL_SANITIZE:-1}
rm -f build/clang-tidy.status build/sanitize-*.status
# Beside ctest: clang-tidy, then the sanitizer trees, one after the other (each writes its status
# to a file when it is done: the ASan tests run while the TSan tree still builds). A status file
# appears whole (renamed into place), so that its reader never sees it empty.
put_status() { echo "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }
# In its own process group (job control for this one job), so that it can be ended whole.
set -m
(
  if [[ ${RUN_ALL_TIDY:-1} != 0 ]]; then
    st=0
    nice -n 10 tests/tools/clang_tidy.sh build >build/clang-tidy.log 2>&1 || st=$?
    put_status build/clang-tidy.status "$st"
  fi
  if [[ $sanitize != 0 ]]; then
    for kind in address thread; do
      st=0
      nice -n 19 tests/tools/sanitize.sh "$kind" --build >"build/sanitize-$kind.log" 2>&1 || st=$?
      put_status "build/sanitize-$kind.status" "$st"
      ((st == 0)) || break
    done
  fi
) </dev/null &
beside=$!
set +m
# Whatever ends this script (a failed step under set -e too) ends the job beside it first.
trap 'kill -- -"$beside" 2>/dev/null || true' EXIT
# The status file's number, once the job beside has written it (or "gone" if it ended without).
status_of() {
  while [[ ! -e $1 ]] && kill -0 "$beside" 2>/dev/null; do sleep 2; done
  if [[ -e $1 ]]; then cat "$1"; else echo gone; fi
}
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
if [[ ${RUN_ALL_TIDY:-1} != 0 ]]; then
  tidy_status=$(status_of build/clang-tidy.status)
  cat build/clang-tidy.log
  [[ $tidy_status == 0 ]] || exit 1
fi
((ctest_status == 0)) || exit "$ctest_status"
if [[ $sanitize != 0 ]]; then
  for kind in address thread; do
    build_status=$(status_of "build/sanitize-$kind.status")
    if [[ $build_status != 0 ]]; then
      cat "build/sanitize-$kind.log"
      exit 1
    fi
    tests/tools/sanitize.sh "$kind" --test
  done
fi
wait "$beside"
