"""bf16 all-reduce on the GPU heap, 1-256 MiB: the same on-stream call timed from Python
(vshmem.all_reduce) and from C++ (the extension's loop over shmemx_bfloat16_sum_reduce_on_stream),
in one run. Per size, `--rounds` rounds each time a batch of `--iters` calls from Python and then
the same batch from C, back to back; the table gives the MEDIAN over rounds of the host
microseconds per call (the cost of issuing it), of the paired difference Python - C, and of the
GPU microseconds per call (CUDA events around each batch). Sizes of 64 MiB and more use a
quarter of the calls per batch (each call there keeps the GPU busy for 30-115 ms).
    vshmemrun -n 2 -- python3 bench/python_allreduce.py [--iters 20] [--rounds 7]

--host: the CPU proxy on the host heap (VSHMEM_BACKEND=host, NumPy): vshmem.reduce against the
extension's bare binding (_c.reduce) with the same arguments, int64 sum of 8 elements; the
difference is what the Python layer adds (argument checks, NumPy attribute reads)."""
import argparse
import statistics
import time

import vshmem

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=20)
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--host", action="store_true")
ap.add_argument("--max-mib", type=int, default=256)
args = ap.parse_args()


def host_proxy():
    import numpy as np
    vshmem.init()
    me = vshmem.my_pe()
    c = vshmem._c
    src = vshmem.empty(8, np.int64)
    dst = vshmem.empty(8, np.int64)
    src[:] = np.random.default_rng().integers(0, 1 << 40, 8)
    vshmem.barrier_all()
    code, opc = vshmem._dtypes.CODE["int64"], vshmem._dtypes.OPS["sum"]
    py, bare, diff = [], [], []
    for _ in range(args.rounds):
        vshmem.barrier_all()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            vshmem.reduce(dst, src, "sum")
        t1 = time.perf_counter()
        vshmem.barrier_all()
        a, b = src.__array_interface__["data"][0], dst.__array_interface__["data"][0]
        t2 = time.perf_counter()
        for _ in range(args.iters):
            c.reduce(c.TEAM_WORLD, opc, code, b, a, 8)
        t3 = time.perf_counter()
        py.append((t1 - t0) * 1e6 / args.iters)
        bare.append((t3 - t2) * 1e6 / args.iters)
        diff.append(py[-1] - bare[-1])
    if me == 0:
        print(f"# host heap, {vshmem.n_pes()} PEs, {args.rounds} rounds x {args.iters} calls; "
              "median us per call")
        print(f"vshmem.reduce {statistics.median(py):.2f}  _c.reduce {statistics.median(bare):.2f}"
              f"  python layer {statistics.median(diff):.2f}")
    vshmem.barrier_all()
    vshmem.free(dst)
    vshmem.free(src)
    vshmem.finalize()


def gpu():
    import torch
    vshmem.init()
    me = vshmem.my_pe()
    torch.cuda.set_device(vshmem._state.heap_device)
    stream = torch.cuda.Stream()
    c = vshmem._c
    if me == 0:
        print(f"# {vshmem.n_pes()} PEs, {args.rounds} rounds x {args.iters} calls per size "
              "(a quarter from 64 MiB); median us per call")
        print(f"{'MiB':>5} {'py_host':>9} {'c_host':>9} {'py-c':>7} {'py_gpu':>9} {'c_gpu':>9}")
    worst = 0.0
    for mib in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        if mib > args.max_mib:
            break
        iters = args.iters if mib < 64 else max(1, args.iters // 4)
        n = mib * (1 << 20) // 2
        src = vshmem.empty(n, torch.bfloat16, device="cuda")
        dst = vshmem.empty(n, torch.bfloat16, device="cuda")
        src.normal_()
        torch.cuda.synchronize()
        vshmem.barrier_all()
        for _ in range(3):                               # warm-up
            vshmem.all_reduce(dst, src, "sum", stream=stream)
        stream.synchronize()
        py_host, c_host, diff, py_gpu, c_gpu = [], [], [], [], []
        for _ in range(args.rounds):
            vshmem.barrier_all()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            t0 = time.perf_counter()
            for _ in range(iters):
                vshmem.all_reduce(dst, src, "sum", stream=stream)
            t1 = time.perf_counter()
            stop.record(stream)
            stop.synchronize()
            h, g = c.time_reduce_from_c(c.TEAM_WORLD, 0, 11, dst.data_ptr(), src.data_ptr(), n,
                                        stream.cuda_stream, iters)
            py_host.append((t1 - t0) * 1e6 / iters)
            py_gpu.append(start.elapsed_time(stop) * 1e3 / iters)
            c_host.append(h)
            c_gpu.append(g)
            diff.append(py_host[-1] - h)
        d = statistics.median(diff)
        worst = max(worst, d)
        if me == 0:
            print(f"{mib:>5} {statistics.median(py_host):9.2f} {statistics.median(c_host):9.2f} "
                  f"{d:7.2f} {statistics.median(py_gpu):9.1f} {statistics.median(c_gpu):9.1f}",
                  flush=True)
        torch.cuda.synchronize()
        vshmem.barrier_all()
        vshmem.free(dst)
        vshmem.free(src)
    if me == 0:
        print(f"# largest median Python - C: {worst:.2f} us (target <= 5): "
              f"{'met' if worst <= 5 else 'MISSED'}")
    vshmem.finalize()


host_proxy() if args.host else gpu()
