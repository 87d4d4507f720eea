#!/usr/bin/env bash
# shmem_init of vshmem and of NVSHMEM in one call, like for like (issue #18 item 5).
#
#   bench/init_compare.sh [--build-dir DIR] [--npes "2 8 16"] [--reps N] [--out FILE]
#                         [--budget SECONDS] [--breakdown "8 16"] [--log-dir DIR] [--no-build]
#
# Both libraries run the same program (bench/gpu_bench.cu --only init; NVSHMEM's variant is
# built from it here when missing or older than the source; with --no-build vshmem runs alone),
# every PE on this machine's GPU(s) in the same MPS state, each library with its own launcher
# (vshmemrun; mpirun for NVSHMEM, as bench/run.sh starts it). Each program
# makes its CUDA context first, then times its library's init: `last_in_to_last_out` (from the
# last PE entering init to the last PE leaving it) and `with_context` (from before the context,
# after MPI_Init for NVSHMEM). Repetitions alternate which library goes first at each PE count.
# --breakdown: one more vshmem run per count at VSHMEM_DEBUG=info (after the first repetition),
# whose "shmem_init steps" and "heap growth" lines say where vshmem's time goes (written to the
# log dir, summed up at the end).
# --budget: no run starts when fewer seconds are left than it is likely to take.
# Prints the medians and vshmem / NVSHMEM per count; the JSON lines go to --out.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VSHMEM_BUILD_DIR:-$repo/build}
npes="2 8 16"
reps=3
out=init-compare.jsonl
budget=100000
breakdown=""
logs=""
build_nv=1
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift ;;
    --npes) npes=$2; shift ;;
    --reps) reps=$2; shift ;;
    --out) out=$2; shift ;;
    --budget) budget=$2; shift ;;
    --breakdown) breakdown=$2; shift ;;
    --log-dir) logs=$2; shift ;;
    --no-build) build_nv=0 ;;
    *) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
  shift
done
logs=${logs:-$(mktemp -d)}
mkdir -p "$logs"
: >"$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
unset VSHMEM_ENABLE_MULTICAST
left() { echo $((budget - SECONDS)); }
log() { echo "[init_compare $SECONDS s] $*" >&2; }
limit() { echo $((10 + $1 / 2)); }  # limit N: the seconds a run of N PEs may take
need() { echo $((3 + $1 / 4)); }    # need N: about what it takes (a start needs this much left)

# ---- NVSHMEM's variant of the bench ------------------------------------------------------------
nvhome=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' \
  2>/dev/null)}
nvbin=$build/bench/nvshmem_bench_gpu
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [[ -z $nvhome || ! -d $nvhome/include ]] || ! command -v mpicxx >/dev/null; then
  log "NVSHMEM or Open MPI not found (nvhome='$nvhome'): vshmem only"
  nvbin=
elif [[ (! -x $nvbin || $repo/bench/gpu_bench.cu -nt $nvbin) && $build_nv == 0 ]]; then
  log "the NVSHMEM variant is missing or older than bench/gpu_bench.cu (--no-build): vshmem only"
  nvbin=
elif [[ ! -x $nvbin || $repo/bench/gpu_bench.cu -nt $nvbin ]]; then
  log "building the NVSHMEM variant of bench/gpu_bench.cu"
  nvlib=$build/bench/nvshmem-lib
  mkdir -p "$nvlib"
  ln -sf "$(ls "$nvhome"/lib/libnvshmem_host.so* | head -1)" "$nvlib/libnvshmem_host.so"
  mpi_flags=()
  for d in $(mpicxx --showme:incdirs); do mpi_flags+=(-I"$d"); done
  for d in $(mpicxx --showme:libdirs); do mpi_flags+=(-L"$d" -Xlinker -rpath="$d"); done
  for l in $(mpicxx --showme:libs); do mpi_flags+=(-l"$l"); done
  timeout $(($(left) > 10 ? $(left) - 5 : 5)) "$nvcc" -O3 -std=c++17 -rdc=true -arch=sm_90 \
    -DVSHMEM_BENCH_NVSHMEM -I"$repo" -I"$nvhome/include" "$repo/bench/gpu_bench.cu" \
    -o "$nvbin.new" -L"$nvlib" -L"$nvhome/lib" -lnvshmem_host -lnvshmem_device "${mpi_flags[@]}" \
    -Xlinker -rpath="$nvhome/lib" && mv "$nvbin.new" "$nvbin" || { log "build failed"; nvbin=; }
fi

run_vshmem() {  # run_vshmem N REP [env...]
  local n=$1 rep=$2; shift 2
  timeout --kill-after=3 "$(limit "$n")" env VSHMEM_BACKEND=cuda "$@" "$build/bin/vshmemrun" \
    -n "$n" -- "$build/bench/vshmem_bench_gpu" --only init --out "$out" \
    --tag gpus=1 --tag "rep=$rep" >>"$logs/vshmem-$n.log" 2>&1 || log "vshmem $n PEs: exit $?"
}
run_nvshmem() {  # run_nvshmem N REP
  local n=$1 rep=$2
  LD_LIBRARY_PATH="$nvhome/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 \
    timeout --kill-after=3 "$(limit "$n")" mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -np "$n" -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
    -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE \
    ${CUDA_MPS_PIPE_DIRECTORY:+-x CUDA_MPS_PIPE_DIRECTORY} \
    "$nvbin" --only init --out "$out" --tag gpus=1 --tag "rep=$rep" >>"$logs/nvshmem-$n.log" 2>&1 ||
    log "NVSHMEM $n PEs: exit $?"
}

breakdown_runs() {
  for n in $breakdown; do
    (($(left) < $(need "$n"))) && { log "breakdown $n PEs: skipped (time)"; continue; }
    run_vshmem "$n" "info" VSHMEM_DEBUG=info
    grep -hE "shmem_init steps|heap growth" "$logs/vshmem-$n.log" >"$logs/breakdown-$n.txt"
  done
}

for ((rep = 1; rep <= reps; rep++)); do
  # The breakdown after the first repetition: it matters more than a third repetition.
  ((rep == 2)) && breakdown_runs
  for n in $npes; do
    # Both runs of this count must fit, or neither starts (a lone run compares with nothing).
    (($(left) < 2 * $(need "$n"))) && { log "rep $rep, $n PEs: skipped (time)"; continue; }
    if [[ -z $nvbin ]]; then
      run_vshmem "$n" "$rep"
    elif ((rep % 2)); then
      run_vshmem "$n" "$rep"
      run_nvshmem "$n" "$rep"
    else
      run_nvshmem "$n" "$rep"
      run_vshmem "$n" "$rep"
    fi
  done
done
((reps < 2)) && breakdown_runs

python3 - "$out" "$logs" "$breakdown" <<'EOF'
import json, re, statistics, sys
out, logs, breakdown = sys.argv[1], sys.argv[2], sys.argv[3].split()
rows = {}
for line in open(out):
    r = json.loads(line)
    if r.get("bench") != "init" or r.get("rep") == "info":
        continue
    rows.setdefault((r["npes"], r["variant"], r["impl"]), []).append(r["value"])
print("shmem_init, ms (median of the repetitions; each value listed)")
print(f"{'PEs':>4} {'variant':<22} {'vshmem':>24} {'NVSHMEM':>24} {'ratio':>6}")
for n in sorted({k[0] for k in rows}):
    for v in ("last_in_to_last_out", "with_context"):
        a, b = rows.get((n, v, "vshmem"), []), rows.get((n, v, "nvshmem"), [])
        ma = statistics.median(a) if a else float("nan")
        mb = statistics.median(b) if b else float("nan")
        fa = "/".join(f"{x:.0f}" for x in a)
        fb = "/".join(f"{x:.0f}" for x in b)
        print(f"{n:>4} {v:<22} {ma:>8.1f} ({fa:>13}) {mb:>8.1f} ({fb:>13}) {ma / mb:>6.2f}")
# The breakdown: per step, the median and the largest over the PEs.
for n in breakdown:
    try:
        text = open(f"{logs}/breakdown-{n}.txt").read()
    except OSError:
        continue
    steps = {}
    for m in re.finditer(r"shmem_init steps \(ms\): (.*)", text):
        for part in m.group(1).split(", "):
            name, ms = part.rsplit(" ", 1)
            steps.setdefault(name, []).append(float(ms))
    grow = {}
    for m in re.finditer(r"heap growth by \d+ bytes \(ms\): (.*)", text):
        for part in m.group(1).split(", "):
            mm = re.match(r"(.*?) ([0-9.]+)$", part)
            grow.setdefault(mm.group(1), []).append(float(mm.group(2)))
    print(f"vshmem at {n} PEs, VSHMEM_DEBUG=info: ms per step, median / max over {len(steps.get('total', []))} PEs")
    for name, v in list(steps.items()) + [("growth: " + k, v) for k, v in grow.items()]:
        print(f"  {name:<40} {statistics.median(v):8.1f} {max(v):8.1f}")
EOF
