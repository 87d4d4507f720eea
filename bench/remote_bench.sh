#!/usr/bin/env bash
# Remote path against Open MPI's OSHMEM (issue #13): the same OpenSHMEM program (remote_bench.c)
# built against vshmem and with oshcc, two PEs on two nodes (vshmemrun --simulate-nodes 2 for
# vshmem; OSHMEM's two PEs on this host), both over UCX with the same UCX_TLS, run interleaved
# ROUNDS times so that the machine's load hits both alike. Prints one JSON line per figure and run.
#   bench/remote_bench.sh [--build-dir DIR] [--rounds N] [--reps N] [--tls "tcp sm,self"]
#                         [--before-dir DIR] [--variant "NAME VAR=VALUE ..."]...
# --before-dir: a second, already built tree (e.g. main before a change) whose
# vshmem_bench_remote runs in the same rounds as "vshmem-before" (it is not rebuilt).
# --variant: one more vshmem run per round with those variables set (repeatable), labelled
# "vshmem-NAME", e.g. --variant "old-plugin VSHMEM_PLUGIN_PATH=/tmp/old" (a plugin built from
# another tree) or --variant "rma-target VSHMEM_UCX_RMA=target".
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
rounds=3
reps=5
tls_list="tcp sm,self"
before=""
variants=()
while (($#)); do
  case "$1" in
    --build-dir) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    --tls) tls_list=$2; shift ;;
    --before-dir) before=$2; shift ;;
    --variant) variants+=("$2"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
cmake --build "$build" --target vshmem_bench_remote vshmemrun >/dev/null
out=$(mktemp -d)
oshcc -O2 -o "$out/remote_bench_oshmem" bench/remote_bench.c
for tls in $tls_list; do
  devs=()
  [[ $tls == tcp ]] && devs=(UCX_NET_DEVICES=lo)
  for ((r = 1; r <= rounds; ++r)); do
    env UCX_TLS="$tls" "${devs[@]}" timeout 300 "$build/bin/vshmemrun" -n 2 --simulate-nodes 2 -- \
      "$build/bench/vshmem_bench_remote" "vshmem[$tls]" "$reps" 2>/dev/null | grep '^{' || true
    for v in "${variants[@]}"; do
      read -r -a words <<<"$v"
      env UCX_TLS="$tls" "${devs[@]}" "${words[@]:1}" timeout 300 "$build/bin/vshmemrun" -n 2 \
        --simulate-nodes 2 -- "$build/bench/vshmem_bench_remote" "vshmem-${words[0]}[$tls]" \
        "$reps" 2>/dev/null | grep '^{' || true
    done
    if [[ -n $before ]]; then
      env UCX_TLS="$tls" "${devs[@]}" timeout 300 "$before/bin/vshmemrun" -n 2 --simulate-nodes 2 \
        -- "$before/bench/vshmem_bench_remote" "vshmem-before[$tls]" "$reps" 2>/dev/null |
        grep '^{' || true
    fi
    # OSHMEM's finalize may crash after the figures are printed (Open MPI 4.1 on Debian 12).
    env UCX_TLS="$tls" "${devs[@]}" timeout 300 oshrun --allow-run-as-root --oversubscribe -np 2 \
      -x UCX_TLS ${devs:+-x UCX_NET_DEVICES} "$out/remote_bench_oshmem" "oshmem[$tls]" "$reps" \
      2>/dev/null | grep '^{' || true
    # OSHMEM's default barrier is Open MPI's MPI barrier, which crosses shared memory between PEs
    # of one host whatever UCX_TLS says (0 TCP bytes a barrier: bench/RESULTS.md, issue #13 session
    # 10), and so does scoll basic's default algorithm: like for like with vshmem's over UCX shared
    # memory, not with its barrier over TCP. For TCP, MPI's messages go over TCP too (pml ob1, btl
    # tcp,self; the RMA rows still go through OSHMEM's UCX layer), labelled oshmem-mpi-tcp.
    if [[ $tls == tcp ]]; then
      env UCX_TLS="$tls" "${devs[@]}" timeout 300 oshrun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo -x UCX_TLS -x UCX_NET_DEVICES \
        "$out/remote_bench_oshmem" "oshmem-mpi-tcp[$tls]" "$reps" 2>/dev/null | grep '^{' || true
    fi
  done
done
rm -rf "$out"
