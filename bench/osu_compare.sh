#!/usr/bin/env bash
# Host collectives and barrier: vshmem against Open MPI's OSHMEM in the same run (issue #15).
#
#   bench/osu_compare.sh [--build-dir DIR] [--npes "2 4"] [--reps N] [--ops LIST] [--max BYTES]
#                        [--base-lib DIR] [--loads "quiet busy"] [--cpus LIST] [--together]
#
# Each operation runs as its own program (one process per operation and PE count), as the OSU
# micro-benchmarks do: what one operation leaves behind (the placement of the PEs on the CPUs, a
# wait policy's state) does not carry into the next. --together runs every operation of --ops in
# one program, one after the other (the layout of the figures in bench/RESULTS.md before session
# 19; on 4 PEs sharing 2 CPUs the two layouts gave different alltoall rows, for both libraries).
#
# --base-lib DIR also runs the same vshmem program against the libvshmem.so found in DIR (with
# LD_LIBRARY_PATH, which the build's RUNPATH yields to; the UCX plugin next to it), interleaved
# with the others: a before/after comparison in one run.
#
# --cpus LIST runs every program under `taskset -c LIST` and pins the busy process to the first CPU
# of LIST: e.g. --cpus 0,1 on a larger machine gives 4 PEs 2 cores, with one busy process on one of
# them. Open MPI binds 2 ranks to its cores 0 and 1 itself (whatever taskset allowed): choose LIST
# as the first CPU of cores 0 and 1 (`lscpu -p=CPU,CORE`) so that both libraries use the same CPUs.
#
# Builds bench/osu_coll.c with oshcc (OSHMEM) next to the vshmem build's vshmem_bench_osu_coll,
# then for each PE count, quiet and with one busy background process (`yes > /dev/null`), runs
# the two alternately --reps times (interleaved, so that a change in the machine's load hits both)
# and prints, per operation and size, the median latency of each and their ratio. vshmem runs on
# the host backend under vshmemrun, OSHMEM under oshrun --oversubscribe.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${VSHMEM_BUILD_DIR:-$repo/build}
npes="2 4"
reps=3
ops=barrier,broadcast,collect,fcollect,alltoall,reduce
max=1048576
base_lib=
loads="quiet busy"
cpus=
together=
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift ;;
    --npes) npes=$2; shift ;;
    --reps) reps=$2; shift ;;
    --ops) ops=$2; shift ;;
    --max) max=$2; shift ;;
    --base-lib) base_lib=$2; shift ;;
    --loads) loads=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --together) together=1 ;;
    *) echo "osu_compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
vbin=$build/bench/vshmem_bench_osu_coll
[ -x "$vbin" ] || cmake --build "$build" --target vshmem_bench_osu_coll >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${busy:-}" ] && kill "$busy" 2>/dev/null || true' EXIT
oshcc -O2 "$repo/bench/osu_coll.c" -o "$tmp/osu_coll_oshmem"
export SHMEM_SYMMETRIC_SIZE=512M VSHMEM_BACKEND=host
# The programs of one round: one per operation, or one for all of them (--together).
programs=("$ops")
[ -n "$together" ] || IFS=, read -r -a programs <<<"$ops"
pin=()
busy_pin=()
if [ -n "$cpus" ]; then pin=(taskset -c "$cpus"); busy_pin=(taskset -c "${cpus%%,*}"); fi
for n in $npes; do
  for load in $loads; do
    busy=
    if [ $load = busy ]; then "${busy_pin[@]}" yes >/dev/null & busy=$!; fi
    for ((r = 0; r < reps; ++r)); do
      for op in "${programs[@]}"; do
        # OSHMEM may crash in its own finalize after printing every figure: keep what it printed.
        "${pin[@]}" "$build/bin/vshmemrun" -n "$n" "$vbin" "$op" "$max" 2>/dev/null |
          sed "s/^/vshmem $n $load /" >>"$tmp/all" || true
        if [ -n "$base_lib" ]; then
          LD_LIBRARY_PATH=$base_lib "${pin[@]}" "$build/bin/vshmemrun" -n "$n" "$vbin" "$op" "$max" \
            2>/dev/null | sed "s/^/base $n $load /" >>"$tmp/all" || true
        fi
        "${pin[@]}" oshrun --allow-run-as-root --oversubscribe -np "$n" "$tmp/osu_coll_oshmem" "$op" \
          "$max" 2>/dev/null | grep -E '^[a-z]+ [0-9]+ [0-9.]+$' |
          sed "s/^/oshmem $n $load /" >>"$tmp/all" || true
      done
    done
    if [ -n "$busy" ]; then kill "$busy"; wait "$busy" 2>/dev/null || true; busy=; fi
  done
done
python3 - "$tmp/all" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    impl, n, load, op, size, us = line.split()
    rows[(int(n), load, op, int(size), impl)].append(float(us))
keys = sorted({k[:4] for k in rows}, key=lambda k: (k[0], k[1] != "quiet", k[2], k[3]))
has_base = any(k[4] == "base" for k in rows)
med = lambda v: statistics.median(v) if v else float("nan")
if has_base:
    print("| PEs | load | op | bytes/PE | vshmem us (median) | before us (median) | OSHMEM us (median) | vshmem/OSHMEM | before/OSHMEM | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
else:
    print("| PEs | load | op | bytes/PE | vshmem us (median) | OSHMEM us (median) | vshmem/OSHMEM | runs |")
    print("|---|---|---|---|---|---|---|---|")
for k in keys:
    v, o, b = rows.get(k + ("vshmem",), []), rows.get(k + ("oshmem",), []), rows.get(k + ("base",), [])
    mv, mo, mb = med(v), med(o), med(b)
    if has_base:
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {mv:.3f} | {mb:.3f} | {mo:.3f} | {mv / mo:.2f} | {mb / mo:.2f} | {len(v)}/{len(b)}/{len(o)} |")
    else:
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {mv:.3f} | {mo:.3f} | {mv / mo:.2f} | {len(v)}/{len(o)} |")
PY
