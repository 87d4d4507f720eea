#!/usr/bin/env bash
# What loading UCX for the global and static variables costs a one-node job (issue #15, item 1):
# shmem_init (last PE in to last PE out, vshmem_bench_host --only init) and the whole job's wall
# time (vshmemrun start to exit), in three set-ups run alternately --reps times:
#   no-ucx    VSHMEM_STATICS_UCX=0: UCX not loaded (other PEs' statics unreachable)
#   default   UCX loaded as shmem_init loads it when UCX_TLS is not set (one node, statics only:
#             posix,cma,self)
#   sm        UCX loaded with UCX_TLS=sm,self (every shared-memory transport)
#   all       UCX loaded with every transport (UCX_TLS=all: what the default was before)
#
#   bench/statics_init_cost.sh [--build-dir DIR] [--npes "2 4"] [--reps N] [--backend host|cuda]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VSHMEM_BUILD_DIR:-$repo/build}
npes="2 4"
reps=7
backend=host
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift ;;
    --npes) npes=$2; shift ;;
    --reps) reps=$2; shift ;;
    --backend) backend=$2; shift ;;
    *) echo "statics_init_cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
bin=$build/bench/vshmem_bench_host
run=$build/bin/vshmemrun
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in $npes; do
  for ((r = 0; r < reps; ++r)); do
    for setup in no-ucx default sm all; do
      case $setup in
        no-ucx) envs=(VSHMEM_STATICS_UCX=0) ;;
        default) envs=(VSHMEM_STATICS_UCX=1 UCX_TLS=) ;;
        sm) envs=(VSHMEM_STATICS_UCX=1 UCX_TLS=sm,self) ;;
        all) envs=(VSHMEM_STATICS_UCX=1 UCX_TLS=all) ;;
      esac
      t0=$(date +%s.%N)
      out=$(env "${envs[@]}" VSHMEM_BACKEND="$backend" "$run" -n "$n" -- "$bin" --only init \
        --out /dev/stdout 2>/dev/null | grep '"bench":"init"' || true)
      t1=$(date +%s.%N)
      init=$(sed -n 's/.*"value":\([0-9.eE+-]*\).*/\1/p' <<<"$out")
      echo "$n $setup ${init:-nan} $(echo "($t1 - $t0) * 1000" | bc -l)" >>"$tmp/all"
    done
  done
done
python3 - "$tmp/all" "$backend" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(lambda: ([], []))
for line in open(sys.argv[1]):
    n, setup, init, job = line.split()
    rows[(int(n), setup)][0].append(float(init))
    rows[(int(n), setup)][1].append(float(job))
print(f"backend {sys.argv[2]}; medians (min-max) over {len(next(iter(rows.values()))[0])} runs")
print("| PEs | set-up | shmem_init ms | whole job ms |")
print("|---|---|---|---|")
order = {"no-ucx": 0, "default": 1, "sm": 2, "all": 3}
for (n, setup) in sorted(rows, key=lambda k: (k[0], order[k[1]])):
    i, j = rows[(n, setup)]
    print(f"| {n} | {setup} | {statistics.median(i):.1f} ({min(i):.1f}-{max(i):.1f}) "
          f"| {statistics.median(j):.0f} ({min(j):.0f}-{max(j):.0f}) |")
PY
