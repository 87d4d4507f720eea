#!/usr/bin/env bash
# Remote path against Open MPI's OSHMEM (issue #13): the same OpenSHMEM program (remote_bench.c)
# built against vshmem and with oshcc, two PEs on two nodes (vshmemrun --simulate-nodes 2 for
# vshmem; OSHMEM's two PEs on this host), both over UCX with the same UCX_TLS, run interleaved
# ROUNDS times so that the machine's load hits both alike. Prints one JSON line per figure and run.
#   bench/remote_bench.sh [--build-dir DIR] [--rounds N] [--reps N] [--tls "tcp sm,self"]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
rounds=3
reps=5
tls_list="tcp sm,self"
while (($#)); do
  case "$1" in
    --build-dir) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    --tls) tls_list=$2; shift ;;
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
    # OSHMEM's finalize may crash after the figures are printed (Open MPI 4.1 on Debian 12).
    env UCX_TLS="$tls" "${devs[@]}" timeout 300 oshrun --allow-run-as-root --oversubscribe -np 2 \
      -x UCX_TLS ${devs:+-x UCX_NET_DEVICES} "$out/remote_bench_oshmem" "oshmem[$tls]" "$reps" \
      2>/dev/null | grep '^{' || true
  done
done
rm -rf "$out"
