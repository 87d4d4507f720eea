#!/usr/bin/env bash
# Runs the vshmem benchmark suite and prints its table (issue #6).
#
#   bench/run.sh [--quick] [--out FILE] [--build-dir DIR] [--host-only] [--no-nvshmem]
#                [--npes "2 4 8"] [--gpu-npes "1 2 4 8"] [--no-host] [--init-runs N]
#                [--gpu-only GROUPS] [--gpu-max-bytes SIZE]
#
# Always: the host-API suite on the host backend (memfd heap), 2 to 8 PEs.
# Where a GPU is usable: the device-API suite (vshmem_bench_gpu) on the cuda backend, 1 to 8 PEs
#   (PE k gets GPU k mod #GPUs; PEs sharing a GPU run under MPS, started here when it is not
#   running), and the host-API suite on the cuda backend.
# Where the NVSHMEM package is found (Python package nvidia-nvshmem, or NVSHMEM_HOME) together
#   with nvcc and Open MPI: the same device workloads compiled against NVSHMEM from
#   bench/gpu_bench.cu, at run time, never as a build dependency, started with mpirun.
#
# Every figure is appended as a JSON line to --out (default bench-results.jsonl, truncated
# first); bench/report.py prints the table from it. --quick is the CI smoke run: fewer sizes and
# repetitions, 2 PEs, no figure asserted.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VSHMEM_BUILD_DIR:-$repo/build}
out=bench-results.jsonl
quick=0
host_only=0
no_host=0
init_runs=
with_nvshmem=1
npes=""
gpu_npes=""
gpu_only=""
gpu_max_arg=""

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --build-dir) build=$2; shift ;;
    --host-only) host_only=1 ;;
    --no-host) no_host=1 ;;
    --init-runs) init_runs=$2; shift ;;
    --no-nvshmem) with_nvshmem=0 ;;
    --npes) npes=$2; shift ;;
    --gpu-npes) gpu_npes=$2; shift ;;
    --gpu-only) gpu_only=$2; shift ;;  # device suites: these groups only, no host-API suite
    --gpu-max-bytes) gpu_max_arg=$2; shift ;;  # largest device message (default 1G, quick 64M)
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
  shift
done
if ((quick)); then
  npes=${npes:-2}
  gpu_npes=${gpu_npes:-2}
  qflag=--quick
  per_run_timeout=120
  init_runs=${init_runs:-0}
else
  npes=${npes:-"2 4 8"}
  gpu_npes=${gpu_npes:-"1 2 4 8"}
  qflag=
  per_run_timeout=${BENCH_RUN_TIMEOUT:-300}
  init_runs=${init_runs:-3}
fi
out=$(realpath -m "$out")
only=()
[[ -n $gpu_only ]] && only=(--only "$gpu_only")
: >"$out"
log() { printf '\n== %s\n' "$*" >&2; }

# NVLink multicast is never used: on shared hosts a faulty multicast setup can take GPUs out of
# service (DESIGN.md); NVSHMEM is told the same.
unset VSHMEM_ENABLE_MULTICAST
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1

# ---- which parts can run here -------------------------------------------------------------
ngpus=0
if ((!host_only)) && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  ngpus=$(nvidia-smi -L | grep -c '^GPU' || true)
  # nvidia-smi ignores CUDA_VISIBLE_DEVICES; the PEs see only the devices it names.
  if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    IFS=, read -ra visible <<<"$CUDA_VISIBLE_DEVICES"
    ngpus=${#visible[@]}
  fi
fi

nvcc=${CUDACXX:-}
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -z $nvcc ]] && nvcc=$(command -v nvcc || true)

# ---- build (only what is missing) ---------------------------------------------------------
targets="vshmem vshmemrun vshmem_bench_host"
need_build=0
[[ -x $build/bench/vshmem_bench_host && -x $build/bin/vshmemrun ]] || need_build=1
if ((ngpus > 0)) && [[ ! -x $build/bench/vshmem_bench_gpu ]]; then need_build=1; fi
if ((need_build)); then
  log "building in $build"
  fresh=()
  # A build folder made here holds only what the benchmarks need.
  [[ -f $build/CMakeCache.txt ]] ||
    fresh=(-DCMAKE_BUILD_TYPE=Release -DVSHMEM_BUILD_TESTS=OFF -DVSHMEM_BUILD_EXAMPLES=OFF)
  cmake -S "$repo" -B "$build" "${fresh[@]}" >&2
  # grep reads all of it (no -q): an early exit would break the pipe under pipefail.
  if ((ngpus > 0)) && cmake --build "$build" --target help | grep vshmem_bench_gpu >/dev/null; then
    targets+=" vshmem_bench_gpu"
  fi
  cmake --build "$build" -j"$(nproc)" --target $targets >&2
fi
vshmemrun=$build/bin/vshmemrun

run_pes() {  # run_pes LAUNCH_DESCRIPTION command...: one benchmark run, bounded in time
  local what=$1; shift
  log "$what"
  local start=$SECONDS rc=0
  timeout --kill-after=10 "${limit:-$per_run_timeout}" "$@" || rc=$?
  if ((rc)); then
    ((rc == 124 || rc == 137)) && what+=" (timed out)"
    echo "run.sh: FAILED: $what, exit status $rc after $((SECONDS - start)) s ($*)" >&2
    failures=$((failures + 1))
  fi
}
failures=0

# ---- host backend -------------------------------------------------------------------------
((no_host)) && npes=""
for n in $npes; do
  run_pes "host suite, host backend, $n PEs" env VSHMEM_BACKEND=host \
    "$vshmemrun" -n "$n" -- "$build/bench/vshmem_bench_host" $qflag --out "$out"
  if ((!quick)); then
    # shmem_init happens once per process: more processes give its median.
    for ((i = 0; i < init_runs; i++)); do
      limit=60 run_pes "host suite, shmem_init again, $n PEs" env VSHMEM_BACKEND=host \
        "$vshmemrun" -n "$n" -- "$build/bench/vshmem_bench_host" --only init --out "$out"
    done
  fi
done

# ---- GPU ----------------------------------------------------------------------------------
mps_started=0
# pgrep's name for the MPS control daemon (comm is cut to 15 characters).
mps_running() { pgrep -x nvidia-cuda-mps >/dev/null 2>&1; }
stop_mps() {
  if ((mps_started)); then
    echo quit | "$mps_ctl" >/dev/null 2>&1 || true
    # Wait until it is gone: a run started right after would otherwise find it on its way out,
    # start none, and run time-sliced.
    for _ in $(seq 50); do mps_running || break; sleep 0.2; done
  fi
}
trap stop_mps EXIT

if ((ngpus > 0)); then
  # Several PEs per GPU need MPS to run their kernels at the same time (a ping-pong between two
  # PEs of one GPU would otherwise time-slice). Start it unless one is already serving.
  mps_ctl=$(command -v nvidia-cuda-mps-control || true)
  [[ -z $mps_ctl && -x /usr/local/nvidia/bin/nvidia-cuda-mps-control ]] &&
    mps_ctl=/usr/local/nvidia/bin/nvidia-cuda-mps-control
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps-log}
  if [[ -n $mps_ctl ]] && mps_running && ! echo get_server_list | "$mps_ctl" >/dev/null 2>&1; then
    # A daemon that does not answer on our pipe folder is leaving or serves another folder: our
    # PEs would not reach it. Give a leaving one time to go, then start ours.
    for _ in $(seq 50); do mps_running || break; sleep 0.2; done
  fi
  if [[ -n $mps_ctl ]] && ! mps_running; then
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if "$mps_ctl" -d; then mps_started=1; log "MPS started"; fi
  elif [[ -n $mps_ctl ]] && ! echo get_server_list | "$mps_ctl" >/dev/null 2>&1; then
    log "an MPS daemon runs but not in $CUDA_MPS_PIPE_DIRECTORY: PEs sharing a GPU will" \
      "time-slice; set CUDA_MPS_PIPE_DIRECTORY to its folder"
  fi
  gpu_tag="gpus=$ngpus"
  # Two buffers of the largest size per PE, plus room for the rest.
  if ((quick)); then heap=1G; gpu_max=64M; else heap=3G; gpu_max=1G; fi
  gpu_max=${gpu_max_arg:-$gpu_max}
  for n in $gpu_npes; do
    if [[ -x $build/bench/vshmem_bench_gpu ]]; then
      run_pes "gpu suite, cuda backend, $n PEs" env VSHMEM_BACKEND=cuda SHMEM_SYMMETRIC_SIZE=$heap \
        "$vshmemrun" -n "$n" -- "$build/bench/vshmem_bench_gpu" $qflag --max-bytes "$gpu_max" \
        "${only[@]}" --out "$out" --tag "$gpu_tag"
    else
      echo "run.sh: no vshmem_bench_gpu in $build (built without CUDA or without the device" \
           "library): device-API benchmarks left out" >&2
    fi
    if ((n == 8)) && [[ -x $build/bench/vshmem_bench_gpu ]]; then
      for ((i = 0; i < init_runs; i++)); do
        limit=60 run_pes "gpu suite, shmem_init again, $n PEs" env VSHMEM_BACKEND=cuda \
          "$vshmemrun" -n "$n" -- "$build/bench/vshmem_bench_gpu" --only init --out "$out" \
          --tag "$gpu_tag"
      done
    fi
    ((n >= 2)) && [[ -z $gpu_only ]] || continue
    # Host calls on the GPU heap cost microseconds each: the quick sweep says enough there
    # (vshmem_bench_gpu measures host-API bandwidth between GPU buffers in full).
    run_pes "host suite, cuda backend, $n PEs" env VSHMEM_BACKEND=cuda SHMEM_SYMMETRIC_SIZE=$heap \
      "$vshmemrun" -n "$n" -- "$build/bench/vshmem_bench_host" --quick --out "$out" \
      --tag "$gpu_tag" --only init,malloc,rma_lat,rma_bw,amo,barrier
  done

  # ---- NVSHMEM, the same workloads ----------------------------------------------------------
  nvhome=${NVSHMEM_HOME:-}
  if [[ -z $nvhome ]]; then
    # nvidia/ is a namespace package: its __path__, not __file__, says where it is.
    nvhome=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null ||
               true)
  fi
  if ((!with_nvshmem)); then
    log "NVSHMEM comparison turned off (--no-nvshmem)"
  elif [[ -z $nvhome || ! -d $nvhome/include ]]; then
    log "NVSHMEM not found (no nvidia-nvshmem Python package, NVSHMEM_HOME unset): no comparison"
  elif [[ -z $nvcc ]] || ! command -v mpirun >/dev/null || ! command -v mpicxx >/dev/null; then
    log "NVSHMEM found at $nvhome, but nvcc or Open MPI (mpirun, mpicxx) is missing: no comparison"
  else
    nvbin=$build/bench/nvshmem_bench_gpu
    nvlib=$build/bench/nvshmem-lib
    nv_built=1
    if [[ ! -x $nvbin || $repo/bench/gpu_bench.cu -nt $nvbin ]]; then
      log "building the NVSHMEM variant from bench/gpu_bench.cu"
      mkdir -p "$nvlib"
      # The wheel ships libnvshmem_host.so.3 only; the linker wants the unversioned name.
      host_so=$(ls "$nvhome"/lib/libnvshmem_host.so* | head -1)
      ln -sf "$host_so" "$nvlib/libnvshmem_host.so"
      cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
      mpi_flags=()
      for d in $(mpicxx --showme:incdirs); do mpi_flags+=(-I"$d"); done
      for d in $(mpicxx --showme:libdirs); do mpi_flags+=(-L"$d" -Xlinker -rpath="$d"); done
      for l in $(mpicxx --showme:libs); do mpi_flags+=(-l"$l"); done
      "$nvcc" -O3 -std=c++17 -rdc=true -arch=sm_"${cc:-90}" -DVSHMEM_BENCH_NVSHMEM \
        -I"$repo" -I"$nvhome/include" "$repo/bench/gpu_bench.cu" -o "$nvbin" \
        -L"$nvlib" -L"$nvhome/lib" -lnvshmem_host -lnvshmem_device "${mpi_flags[@]}" \
        -Xlinker -rpath="$nvhome/lib" || nv_built=0
    fi
    # NVSHMEM loads its bootstrap plugins from its lib folder.
    export LD_LIBRARY_PATH="$nvhome/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # Several PEs on one GPU is "limited MPG" to NVSHMEM unless CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    # is set to 100/PEs: its on-stream reductions then refuse to run ("Called NVSHMEM API not
    # supported with limited MPG", exit 255: run 12 lost its bf16 comparison so). vshmem's PEs
    # share the GPU's SMs under MPS without a cap; NVSHMEM is told to do the same.
    export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
    mpi_env=(-x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH
             -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)
    if ((!nv_built)); then
      echo "run.sh: FAILED: the NVSHMEM variant did not build: no comparison" >&2
      failures=$((failures + 1))
      gpu_npes=""
    fi
    [[ -n ${CUDA_MPS_PIPE_DIRECTORY:-} ]] && mpi_env+=(-x CUDA_MPS_PIPE_DIRECTORY)
    [[ -n ${CUDA_MPS_LOG_DIRECTORY:-} ]] && mpi_env+=(-x CUDA_MPS_LOG_DIRECTORY)
    for n in $gpu_npes; do
      run_pes "NVSHMEM gpu suite, $n PEs" mpirun --allow-run-as-root --oversubscribe \
        --bind-to none -np "$n" -x NVSHMEM_SYMMETRIC_SIZE=$heap "${mpi_env[@]}" \
        "$nvbin" $qflag --max-bytes "$gpu_max" "${only[@]}" --out "$out" --tag "$gpu_tag"
      if ((n == 8)); then
        for ((i = 0; i < init_runs; i++)); do
          limit=60 run_pes "NVSHMEM shmem_init again, $n PEs" mpirun --allow-run-as-root --oversubscribe \
            --bind-to none -np "$n" "${mpi_env[@]}" \
            "$nvbin" --only init --out "$out" --tag "$gpu_tag"
        done
      fi
    done
  fi
elif ((!host_only)); then
  log "no usable GPU: host backend only"
fi

log "results: $out"
python3 "$repo/bench/report.py" "$out"
if ((failures)); then
  echo "run.sh: $failures benchmark run(s) failed (see above)" >&2
  exit 1
fi
