#!/usr/bin/env bash
# The GPU check, on a machine with an NVIDIA GPU: builds for Hopper, starts MPS (several PEs share
# one GPU; without MPS their kernels time-slice), runs every test labelled gpu, and stops MPS.
#   tests/tools/gpu_ci.sh [ctest args...]        e.g.  -R device  or  -E gpu.errors
# Logs go to $OUT when set (the device tool's output folder), else to "$bdir"/.
# Multicast stays off: never set VSHMEM_ENABLE_MULTICAST on shared machines.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
# A device-test phase that hangs fails after this many seconds, naming the PE and the phase.
export VSHMEM_TEST_PHASE_TIMEOUT=${VSHMEM_TEST_PHASE_TIMEOUT:-30}
bdir=${BUILD_DIR:-build-gpu}
out=${OUT:-$bdir}
mkdir -p "$out"
gtest=()
[ -d .gtest ] && gtest=(-DVSHMEM_GTEST_SOURCE_DIR="$PWD/.gtest")
cmake -S . -B "$bdir" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${gtest[@]}" >"$out/configure.log" 2>&1 || { tail -50 "$out/configure.log"; exit 1; }
cmake --build "$bdir" -j"$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error" -A5 "$out/build.log" | head -80; exit 1; }
mps=/usr/local/nvidia/bin/nvidia-cuda-mps-control
command -v nvidia-cuda-mps-control >/dev/null && mps=nvidia-cuda-mps-control
export CUDA_MPS_PIPE_DIRECTORY=/tmp/vshmem-mps CUDA_MPS_LOG_DIRECTORY=/tmp/vshmem-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
"$mps" -d && echo "MPS started"
trap 'echo quit | "$mps"' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# The GPU interconnect (NVLink / PCIe paths), for the record of multi-GPU runs.
nvidia-smi topo -m >"$out/topology.txt" 2>&1 && head -20 "$out/topology.txt"
ctest --test-dir "$bdir" -L gpu --output-on-failure --timeout 90 "$@" 2>&1 | tee "$out/ctest-gpu.log" | grep -vE "^\s+Start|^\s*$" | tail -60
