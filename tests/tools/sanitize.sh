#!/usr/bin/env bash
# The multi-PE and unit suites under a sanitizer, host code only (nvcc takes no sanitizer flags,
# and no GPU is needed):
#   tests/tools/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer
#   tests/tools/sanitize.sh thread    # ThreadSanitizer
# Builds in build-<sanitizer>/ and runs the tests labelled unit or mpe that use vshmemrun (the
# mpirun launchers and the Python package start processes the sanitizer runtime was not loaded
# into). Not part of tests/run_all.sh: a sanitized build and run costs more than the rest of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=${1:?usage: sanitize.sh address|thread}
dir=build-$kind
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVSHMEM_WITH_CUDA=OFF \
  -DVSHMEM_SANITIZE="$kind" -DVSHMEM_WITH_PYTHON=OFF -DVSHMEM_BUILD_BENCH=OFF \
  -DVSHMEM_BUILD_EXAMPLES=OFF
cmake --build "$dir" -j"$(nproc)"
# A report fails the test (the sanitizers' exit code), and every report is kept in full.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0:exitcode=86}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=86}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=86:second_deadlock_stack=1}
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 -L "unit|vshmemrun" -LE gpu \
  -E "python|install|build\\.|register_budget|multimem_ptx"
