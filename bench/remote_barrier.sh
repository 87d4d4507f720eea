#!/usr/bin/env bash
# Remote operations between two PEs whose messages cross TCP (issue #13): vshmem on two simulated
# nodes against Open MPI's OSHMEM in configurations whose messages do cross TCP, in the same
# rounds, with a check of the path each one really took and a count of what it sent.
#
#   bench/remote_barrier.sh [--build-dir DIR] [--rounds N] [--iters N] [--base-lib DIR]
#                           [--ops "barrier put_quiet put get fadd"] [--pause S]
#                           [--tls TLS] [--cpus LIST] [--variant "NAME VAR=VALUE ..."]...
#                           [--no-build] [--raw FILE]
#
# --raw FILE: also append each figure's line ("OP RUN us bytes segs_out*10 segs_in*10") to FILE as
# it is measured (kept when the script is cut short).
# --cpus LIST: every PE of both libraries on those CPUs (taskset; oshrun --bind-to none, since
# oshrun re-binds its PEs otherwise). --variant: one more vshmem run per operation and round,
# with those variables set (repeatable), e.g. --variant "rma-target VSHMEM_UCX_RMA=target".
#
# Why the check: with both PEs on one host, OSHMEM's barrier never touches its UCX transport,
# whatever UCX_TLS says. Its default (scoll mpi) is Open MPI's MPI barrier, whose messages go
# through the MPI point-to-point layer (ob1 over the shared-memory vader BTL), and `--mca scoll
# basic` picks the "adaptive" algorithm, which for PEs of one node also uses that layer's
# send/recv. So this script also runs OSHMEM with (a) the MPI layer restricted to TCP loopback
# (`--mca pml ob1 --mca btl tcp,self`: the default barrier, over TCP) and (b) OSHMEM's own
# recursive-doubling barrier (`--mca scoll basic --mca scoll_basic_barrier_alg 2`: gets and puts
# through its UCX layer, UCX_TLS=tcp). For every run it samples, with `ss -tinp`, PE 0's TCP
# sockets before and after the timed loop: the bytes PE 0 sent and the segments it sent and
# received per operation (> 0: the operation's messages crossed TCP; 0: they did not). Segments
# count TCP's own acknowledgements too; bytes do not.
#
# Operations other than the barrier (put_quiet, get, fadd: PE 0 to PE 1, remote_barrier.c) go
# through each library's UCX layer in every configuration; they are run against OSHMEM's default.
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
ops=barrier
pause=2
tls=tcp
cpus=
variants=()
build_first=1
raw=/dev/null
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --iters) iters=$2; shift ;;
    --base-lib) base_lib=$2; shift ;;
    --ops) ops=$2; shift ;;
    --pause) pause=$2; shift ;;
    --tls) tls=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --variant) variants+=("$2"); shift ;;
    --no-build) build_first=0 ;;
    --raw) raw=$2; shift ;;
    *) echo "remote_barrier.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if ((build_first)); then
  cmake --build "$build" --target vshmem_bench_remote_barrier vshmemrun >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
oshcc -O2 "$repo/bench/remote_barrier.c" -o "$tmp/remote_barrier_oshmem"
export UCX_TLS=$tls UCX_NET_DEVICES=lo SHMEM_SYMMETRIC_SIZE=64M VSHMEM_BACKEND=host
pin=()
[ -n "$cpus" ] && pin=(taskset -c "$cpus")
vrun=("${pin[@]}" "$build/bin/vshmemrun" -n 2 --simulate-nodes 2 -- "$build/bench/vshmem_bench_remote_barrier")
orun=(oshrun --allow-run-as-root --oversubscribe -np 2 -x UCX_TLS -x UCX_NET_DEVICES)
[ -n "$cpus" ] && orun+=(--bind-to none)
ocmd=("${pin[@]}" "$tmp/remote_barrier_oshmem")

# "bytes_sent segs_out segs_in" so far on the TCP sockets of process $1.
tcp_sent() {
  # (no socket of that process, e.g. over shared memory: 0 0 0, not a failed pipeline)
  ss -tinpH 2>/dev/null | { grep -A1 "pid=$1," || true; } |
    { grep -oE '(bytes_sent|segs_out|segs_in):[0-9]+' || true; } |
    awk -F: '{s[$1] += $2} END {print s["bytes_sent"] + 0, s["segs_out"] + 0, s["segs_in"] + 0}'
}

# run NAME CMD...: one process pair that runs every operation of $ops in turn; appends
# "OP NAME us bytes segs_out*10 segs_in*10" (per operation) to $tmp/all for each.
run() {
  local name=$1 out=$tmp/out pid='' s1='' s2='' us='' op='' line=''
  shift
  : >"$out"
  timeout 300 "$@" "$iters" "$pause" "${ops// /,}" >"$out" 2>/dev/null &
  local job=$!
  # wait_line PATTERN: the first output line matching PATTERN (awk), or "" once the run ends.
  wait_line() {
    local l=
    for _ in $(seq 6000); do
      l=$(awk -v p="$1" '$0 ~ p {print; exit}' "$out")
      [ -n "$l" ] && break
      kill -0 "$job" 2>/dev/null || { l=$(awk -v p="$1" '$0 ~ p {print; exit}' "$out"); break; }
      sleep 0.02
    done
    echo "$l"
  }
  line=$(wait_line '^pid ')
  pid=${line#pid }
  for op in $ops; do
    s1='' s2='' us=''
    [ -n "$pid" ] && [ -n "$(wait_line "^ready $op\$")" ] && s1=$(tcp_sent "$pid")
    line=$(wait_line "^$op ")
    us=${line#"$op "}
    [ -n "$us" ] && s2=$(tcp_sent "$pid")
    if [ -n "$us" ] && [ -n "$s1" ]; then
      read -r b1 o1 i1 <<<"$s1"
      read -r b2 o2 i2 <<<"$s2"
      echo "$op $name $us $(((b2 - b1) / iters)) $(((o2 - o1) * 10 / iters)) $(((i2 - i1) * 10 / iters))" |
        tee -a "$raw" >>"$tmp/all"
    else
      echo "remote_barrier.sh: $name printed no figure for $op" >&2
    fi
  done
  wait "$job" 2>/dev/null || true # OSHMEM 4.1 may crash in its finalize, after the figures
}

for ((r = 0; r < rounds; ++r)); do
  run vshmem "${vrun[@]}"
  if [ -n "$base_lib" ]; then LD_LIBRARY_PATH=$base_lib run vshmem-before "${vrun[@]}"; fi
  for v in "${variants[@]}"; do
    read -r -a words <<<"$v"
    run "${words[0]}" env "${words[@]:1}" "${vrun[@]}"
  done
  run oshmem-default "${orun[@]}" "${ocmd[@]}"
  if [[ " $ops " == *" barrier "* ]]; then
    # Like for like with OSHMEM's default barrier (shared memory between PEs of one host):
    # vshmem's remote barrier over UCX's shared-memory transports (0 TCP bytes expected).
    ops=barrier UCX_TLS=sm,self run vshmem-sm "${vrun[@]}"
    ops=barrier run oshmem-btl-tcp "${orun[@]}" --mca pml ob1 --mca btl tcp,self \
      --mca btl_tcp_if_include lo "${ocmd[@]}"
    ops=barrier run oshmem-ucx-rd "${orun[@]}" --mca scoll basic --mca scoll_basic_barrier_alg 2 \
      "${ocmd[@]}"
  fi
done
python3 - "$tmp/all" "$iters" "$tls" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    op, name, t, b, o, i = line.split()
    if (op, name) not in order: order.append((op, name))
    rows[op, name].append((float(t), int(b), int(o) / 10, int(i) / 10))
print(f"2 PEs on 2 (simulated) nodes, UCX_TLS={sys.argv[3]} UCX_NET_DEVICES=lo, {sys.argv[2]} operations a run")
print("| operation | run | us (median) | runs | TCP bytes PE 0 sent per op | segments out / in per op | crossed TCP | us / vshmem |")
print("|---|---|---|---|---|---|---|---|")
for op, n in order:
    r = rows[op, n]
    m = statistics.median(x[0] for x in r)
    b = statistics.median(x[1] for x in r)
    so = statistics.median(x[2] for x in r); si = statistics.median(x[3] for x in r)
    ref = [x[0] for x in rows[op, "vshmem"]]
    rel = m / statistics.median(ref) if ref else float("nan")
    runs = ", ".join(f"{x[0]:.3g}" for x in r)
    print(f"| {op} | {n} | {m:.3g} | {runs} | {b:g} | {so:g} / {si:g} | {'yes' if b > 0 else 'no'} | {rel:.2f} |")
PY
