#!/usr/bin/env bash
# shmem_barrier_all between two PEs whose messages cross TCP (issue #13): vshmem on two simulated
# nodes against Open MPI's OSHMEM in configurations whose barrier does cross TCP, in the same
# rounds, with a check of the path each one really took.
#
#   bench/remote_barrier.sh [--build-dir DIR] [--rounds N] [--iters N] [--base-lib DIR]
#
# Why the check: with both PEs on one host, OSHMEM's barrier never touches its UCX transport,
# whatever UCX_TLS says. Its default (scoll mpi) is Open MPI's MPI barrier, whose messages go
# through the MPI point-to-point layer (ob1 over the shared-memory vader BTL), and `--mca scoll
# basic` picks the "adaptive" algorithm, which for PEs of one node also uses that layer's
# send/recv. So this script also runs OSHMEM with (a) the MPI layer restricted to TCP loopback
# (`--mca pml ob1 --mca btl tcp,self`: the default barrier, over TCP) and (b) OSHMEM's own
# recursive-doubling barrier (`--mca scoll basic --mca scoll_basic_barrier_alg 2`: gets and puts
# through its UCX layer, UCX_TLS=tcp). For every run it samples, with `ss -tinp`, the bytes PE 0
# sent on its TCP sockets before and after the timed loop: bytes per barrier > 0 means the
# barrier's messages crossed TCP; 0 means they did not (shared memory).
#
# vshmem-sm: the same vshmem program with UCX_TLS=sm,self (its messages cross UCX's shared memory
# instead of TCP): the like-for-like row for OSHMEM's default barrier.
#
# --base-lib DIR also runs the vshmem program against the libvshmem.so in DIR (LD_LIBRARY_PATH;
# its UCX plugin in DIR/vshmem), in the same rounds: before/after.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
rounds=3
iters=2000
base_lib=
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --iters) iters=$2; shift ;;
    --base-lib) base_lib=$2; shift ;;
    *) echo "remote_barrier.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
cmake --build "$build" --target vshmem_bench_remote_barrier vshmemrun >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
oshcc -O2 "$repo/bench/remote_barrier.c" -o "$tmp/remote_barrier_oshmem"
export UCX_TLS=tcp UCX_NET_DEVICES=lo SHMEM_SYMMETRIC_SIZE=64M VSHMEM_BACKEND=host
vrun=("$build/bin/vshmemrun" -n 2 --simulate-nodes 2 -- "$build/bench/vshmem_bench_remote_barrier")
orun=(oshrun --allow-run-as-root --oversubscribe -np 2 -x UCX_TLS -x UCX_NET_DEVICES)
ocmd=("$tmp/remote_barrier_oshmem")

# Bytes sent so far on the TCP sockets of process $1.
tcp_sent() {
  # (no socket of that process, e.g. over shared memory: 0, not a failed pipeline)
  ss -tinpH 2>/dev/null | { grep -A1 "pid=$1," || true; } | { grep -oE 'bytes_sent:[0-9]+' || true; } |
    cut -d: -f2 | awk '{s += $1} END {print s + 0}'
}

# run NAME CMD...: one timed loop; appends "NAME us bytes_per_barrier" to $tmp/all.
run() {
  local name=$1 out=$tmp/out pid= s1= s2= us=
  shift
  : >"$out"
  timeout 300 "$@" "$iters" 2 >"$out" 2>/dev/null &
  local job=$!
  for _ in $(seq 600); do
    pid=$(awk '$1 == "pid" {print $2}' "$out")
    [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] && s1=$(tcp_sent "$pid")
  for _ in $(seq 6000); do
    us=$(awk '$1 == "barrier" {print $2}' "$out")
    [ -n "$us" ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$us" ] && s2=$(tcp_sent "$pid")
  wait "$job" 2>/dev/null || true # OSHMEM 4.1 may crash in its finalize, after the figures
  if [ -n "$us" ] && [ -n "$s1" ]; then
    echo "$name $us $(((s2 - s1) / iters))" >>"$tmp/all"
  else
    echo "remote_barrier.sh: $name printed no figure" >&2
  fi
}

for ((r = 0; r < rounds; ++r)); do
  run vshmem "${vrun[@]}"
  # Like for like with OSHMEM's default barrier (shared memory between PEs of one host): vshmem's
  # remote barrier over UCX's shared-memory transports (0 TCP bytes expected).
  UCX_TLS=sm,self run vshmem-sm "${vrun[@]}"
  if [ -n "$base_lib" ]; then LD_LIBRARY_PATH=$base_lib run vshmem-before "${vrun[@]}"; fi
  run oshmem-default "${orun[@]}" "${ocmd[@]}"
  run oshmem-btl-tcp "${orun[@]}" --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo \
    "${ocmd[@]}"
  run oshmem-ucx-rd "${orun[@]}" --mca scoll basic --mca scoll_basic_barrier_alg 2 "${ocmd[@]}"
done
python3 - "$tmp/all" "$iters" <<'PY'
import sys, statistics, collections
us, by = collections.defaultdict(list), collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    name, t, b = line.split()
    if name not in order: order.append(name)
    us[name].append(float(t)); by[name].append(int(b))
ref = statistics.median(us["vshmem"]) if us["vshmem"] else float("nan")
print(f"2 PEs on 2 (simulated) nodes, UCX_TLS=tcp UCX_NET_DEVICES=lo, {sys.argv[2]} barriers a run")
print("| run | barrier us (median) | runs | TCP bytes PE 0 sent per barrier (median) | crossed TCP | us / vshmem |")
print("|---|---|---|---|---|---|")
for n in order:
    m = statistics.median(us[n]); b = statistics.median(by[n])
    runs = ", ".join(f"{x:.3g}" for x in us[n])
    print(f"| {n} | {m:.3g} | {runs} | {b:g} | {'yes' if b > 0 else 'no'} | {m / ref:.2f} |")
PY
