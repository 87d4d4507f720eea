#!/usr/bin/env bash
# The GPU check: builds for Hopper and runs every test labelled gpu under MPS, once with every PE
# on GPU 0 (PEs sharing one GPU) and, on a host with several GPUs, once more with the PEs spread
# over all of them (PE k on GPU k mod #GPUs, vshmemrun's default). Logs go to $OUT (the device
# tool's output folder) or to the build folder.
#   BUILD_DIR=build tests/tools/gpu_multi.sh [ctest args...]
# Multicast stays off: never set VSHMEM_ENABLE_MULTICAST on shared machines.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
export VSHMEM_TEST_PHASE_TIMEOUT=${VSHMEM_TEST_PHASE_TIMEOUT:-30}
bdir=${BUILD_DIR:-build-gpu}
out=${OUT:-$bdir}
mkdir -p "$out"
gtest=()
[ -d .gtest ] && gtest=(-DVSHMEM_GTEST_SOURCE_DIR="$PWD/.gtest")
if [ ! -f "$bdir/CMakeCache.txt" ]; then
  cmake -S . -B "$bdir" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${gtest[@]}" >"$out/configure.log" 2>&1 || { tail -50 "$out/configure.log"; exit 1; }
fi
cmake --build "$bdir" -j"$(nproc)" >"$out/build.log" 2>&1 ||
  { grep -E "error" -A5 "$out/build.log" | head -80; exit 1; }
mps=/usr/local/nvidia/bin/nvidia-cuda-mps-control
command -v nvidia-cuda-mps-control >/dev/null && mps=nvidia-cuda-mps-control
export CUDA_MPS_PIPE_DIRECTORY=/tmp/vshmem-mps CUDA_MPS_LOG_DIRECTORY=/tmp/vshmem-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
"$mps" -d && echo "MPS started"
# At exit: stop MPS and wait until its daemon is gone, so that whatever runs next (bench/run.sh)
# starts its own instead of finding one on its way out.
stop_mps() {
  echo quit | "$mps"
  for _ in $(seq 50); do pgrep -x nvidia-cuda-mps >/dev/null || break; sleep 0.2; done
}
trap stop_mps EXIT
nvidia-smi topo -m >"$out/topology.txt" 2>&1
ngpus=$(nvidia-smi -L | grep -c '^GPU')
summary() { grep -E "tests passed|\(Failed\)|\(Timeout\)|\(Not Run\)" "$1"; }
echo "== every PE on GPU 0"
CUDA_VISIBLE_DEVICES=0 ctest --test-dir "$bdir" -L gpu -j4 --output-on-failure --timeout 90 "$@" \
  >"$out/ctest-1gpu.log" 2>&1
summary "$out/ctest-1gpu.log"
if ((ngpus > 1)); then
  echo "== PEs spread over $ngpus GPUs"
  ctest --test-dir "$bdir" -L gpu -j4 --output-on-failure --timeout 90 "$@" \
    >"$out/ctest-${ngpus}gpu.log" 2>&1
  summary "$out/ctest-${ngpus}gpu.log"
fi
