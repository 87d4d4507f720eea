"""bf16 all-reduce on the GPU heap, 1-256 MiB: the same on-stream call timed from Python
(vshmem.all_reduce) and from C++ (the extension's loop over shmemx_bfloat16_sum_reduce_on_stream),
in one run. Prints, per size, host microseconds per call (the cost of issuing it) and GPU
microseconds per call (between CUDA events), for both.
    vshmemrun -n 2 python3 bench/python_allreduce.py [--iters 50]"""
import argparse
import time

import torch

import vshmem

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=50)
args = ap.parse_args()
vshmem.init()
me = vshmem.my_pe()
torch.cuda.set_device(vshmem._state.heap_device)
stream = torch.cuda.Stream()
c = vshmem._c
if me == 0:
    print(f"# {vshmem.n_pes()} PEs, {args.iters} calls per size; us per call")
    print(f"{'MiB':>5} {'py_host':>9} {'c_host':>9} {'py-c':>7} {'py_gpu':>9} {'c_gpu':>9}")
for mib in (1, 2, 4, 8, 16, 32, 64, 128, 256):
    n = mib * (1 << 20) // 2
    src = vshmem.empty(n, torch.bfloat16, device="cuda")
    dst = vshmem.empty(n, torch.bfloat16, device="cuda")
    src.normal_()
    torch.cuda.synchronize()
    vshmem.barrier_all()
    for _ in range(3):                               # warm-up
        vshmem.all_reduce(dst, src, "sum", stream=stream)
    stream.synchronize()
    vshmem.barrier_all()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    t0 = time.perf_counter()
    for _ in range(args.iters):
        vshmem.all_reduce(dst, src, "sum", stream=stream)
    t1 = time.perf_counter()
    stop.record(stream)
    stop.synchronize()
    py_host = (t1 - t0) * 1e6 / args.iters
    py_gpu = start.elapsed_time(stop) * 1e3 / args.iters
    vshmem.barrier_all()
    c_host, c_gpu = c.time_reduce_from_c(c.TEAM_WORLD, 0, 11, dst.data_ptr(), src.data_ptr(), n,
                                         stream.cuda_stream, args.iters)
    if me == 0:
        print(f"{mib:>5} {py_host:9.2f} {c_host:9.2f} {py_host - c_host:7.2f} {py_gpu:9.1f} "
              f"{c_gpu:9.1f}", flush=True)
    torch.cuda.synchronize()
    vshmem.barrier_all()
    vshmem.free(dst)
    vshmem.free(src)
vshmem.finalize()
