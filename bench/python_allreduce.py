"""bf16 all-reduce on the GPU heap, 1-256 MiB: the same on-stream call timed from Python and from
C++ in one run (issue #20: the Python layer adds at most 5 us a call).
    vshmemrun -n 2 -- python3 bench/python_allreduce.py [--iters 20] [--rounds 7]

Every call is timed on its own, from C++ and from Python alike: a clock read before the first call
of a batch and after each call, nothing else in between (C++: steady_clock in the extension's loop,
time_calls_from_c; Python: time.perf_counter_ns in the loop a user writes, so the loop and the
clock's own cost count against Python). Every size gets the same samples: `--rounds` rounds of one
batch of `--iters` calls per variant, in an order that rotates from round to round; every PE passes
a barrier before each batch, and each batch ends with the stream drained (CUDA events around it
give the GPU time per call). Variants:
  c      the extension's C++ loop over shmemx_bfloat16_sum_reduce_on_stream (the reference)
  py     vshmem.all_reduce(dst, src, "sum", stream=s): the package as shipped (a native function)
  s4     the package as session 4 shipped it (a Python function calling the native short path,
         copied below): the "before" of this session's native entry
  bind   the bare pybind11 binding reduce_on_stream(...) with ready integers: the floor of a
         pybind11 path
  layer  vshmem.all_reduce with the short path's dry run on: every check, no launch (what the
         Python layer costs by itself on this CPU)
Statistics, the same for every variant: the median of the rounds x iters per-call samples, and for
py, s4 and bind the median of the paired differences to c (call k of round r against call k of c's
batch in round r: the same position after a drained stream and a barrier) with a distribution-free
95% interval of that median (order statistics), and the plain mean difference. Nothing is trimmed.

Before the sizes, the launch floor of the C call's host time (1 MiB buffers): an empty kernel
launched with <<<>>>, with cudaLaunchKernelEx (as libvshmem_device launches) and with the driver's
cuLaunchKernel (no runtime layer), the device library's one-launch shmemx_barrier_on_stream, the
all-reduce below the wide threshold (64 KiB: one launch) and at 1 MiB (barrier, reduce, barrier,
gather, barrier: five launches); then the Python layer's pieces without a launch (the dry run, the
same in place, torch's attribute reads alone).

--host: the CPU proxy on the host heap (VSHMEM_BACKEND=host, NumPy, int64 sum of 8 elements):
vshmem.reduce, session 4's entry, the bare binding _c.reduce, and the dry run.
--proxy: the GPU short path's Python cost without a GPU (host heap, any backend): stand-in tensors
whose data_ptr/is_contiguous are C callables, as torch's are; vshmem.all_reduce against session 4's
entry, both in dry run (every check, no call)."""
import argparse
import itertools
import math
import statistics
import time

import vshmem

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=20)
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--host", action="store_true")
ap.add_argument("--proxy", action="store_true")
ap.add_argument("--max-mib", type=int, default=256)
args = ap.parse_args()
_c = vshmem._c
pc = time.perf_counter_ns


# --- session 4's entry, as it was in python/vshmem/__init__.py (the "before") -----------------

def s4_reduce(dest, source, op="sum", team=None, stream=None, _fast=_c.fast_reduce):
    """vshmem.reduce of session 4 on its short path (the general path is not timed here)."""
    if team is None and _fast(dest, source, op, stream, False):
        return
    raise RuntimeError("the benchmark's arguments left the short path")


# --- statistics -------------------------------------------------------------------------------

def rotated(names, r):
    k = r % len(names)
    return names[k:] + names[:k]


def med(xs):
    return statistics.median(xs)


def median_ci(xs):
    """The median and a distribution-free 95% interval for it: order statistics
    n/2 -+ 1.96 sqrt(n)/2 (the binomial's normal approximation), clamped to the sample."""
    xs = sorted(xs)
    n = len(xs)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return statistics.median(xs), xs[lo], xs[hi]


def paired(a, b):
    """Per-call differences a - b, call k of round r against call k of round r."""
    return [x - y for ra, rb in zip(a, b) for x, y in zip(ra, rb)]


def flat(rounds):
    return [x for r in rounds for x in r]


def us(stamps):
    return [(b - a) / 1e3 for a, b in zip(stamps, stamps[1:])]


# --- CPU proxies ------------------------------------------------------------------------------

def host_proxy():
    import numpy as np
    vshmem.init()
    me = vshmem.my_pe()
    src = vshmem.empty(8, np.int64)
    dst = vshmem.empty(8, np.int64)
    src[:] = np.random.default_rng().integers(0, 1 << 40, 8)
    vshmem.barrier_all()
    code, opc = vshmem._dtypes.CODE["int64"], vshmem._dtypes.OPS["sum"]
    a, b = src.ctypes.data, dst.ctypes.data
    n = args.iters

    def batch(name):
        st = [0] * (n + 1)
        if name in ("py", "layer"):
            f = vshmem.reduce
            st[0] = pc()
            for i in range(1, n + 1):
                f(dst, src, "sum")
                st[i] = pc()
        elif name == "s4":
            st[0] = pc()
            for i in range(1, n + 1):
                s4_reduce(dst, src, "sum")
                st[i] = pc()
        else:
            f, w = _c.reduce, _c.TEAM_WORLD
            st[0] = pc()
            for i in range(1, n + 1):
                f(w, opc, code, b, a, 8)
                st[i] = pc()
        return us(st)

    names = ["py", "s4", "bind", "layer"]
    t = {k: [] for k in names}
    for r in range(args.rounds):
        for name in rotated(names, r):
            vshmem.barrier_all()
            _c.fast_set_dry_run(name == "layer")
            t[name].append(batch(name))
            _c.fast_set_dry_run(False)
    if me == 0:
        print(f"# host heap, {vshmem.n_pes()} PEs, {args.rounds} rounds x {args.iters} calls, "
              "each call timed; median us per call [95% interval of the median]")
        for name, what in (("py", "vshmem.reduce (native entry)"),
                           ("s4", "session 4's entry (Python def + fast_reduce)"),
                           ("bind", "bare pybind11 _c.reduce"), ("layer", "dry run (checks)")):
            m, lo, hi = median_ci(flat(t[name]))
            print(f"{what:46} {m:7.3f} [{lo:.3f}, {hi:.3f}]")
        m, lo, hi = median_ci(paired(t["py"], t["s4"]))
        print(f"{'paired py - s4':46} {m:7.3f} [{lo:.3f}, {hi:.3f}]")
    vshmem.barrier_all()
    vshmem.free(dst)
    vshmem.free(src)
    vshmem.finalize()


class _StandIn:
    """A tensor as the short path sees one: C callables for data_ptr/is_contiguous (torch's are C
    methods), plain dtype and nbytes."""

    def __init__(self, addr, nbytes, dtype):
        self.data_ptr = itertools.repeat(addr).__next__
        self.is_contiguous = itertools.repeat(True).__next__
        self.nbytes = nbytes
        self.dtype = dtype


class _StandInStream:
    def __init__(self, handle):
        self.cuda_stream = handle


def gpu_proxy():
    import numpy as np
    vshmem.init()
    me = vshmem.my_pe()
    n = 1 << 10
    x = vshmem.empty(n, np.uint16)
    y = vshmem.empty(n, np.uint16)
    bf16 = type("bfloat16_dtype", (), {})()           # stands in for torch.bfloat16
    src, dst = _StandIn(x.ctypes.data, 2 * n, bf16), _StandIn(y.ctypes.data, 2 * n, bf16)
    stream = _StandInStream(0x1234)
    code, opc = vshmem._dtypes.CODE["bfloat16"], vshmem._dtypes.OPS["sum"]
    # The native short path as on the GPU heap, in dry run (nothing is launched).
    _c.fast_configure(True, vshmem.n_pes(), None, 0)
    _c.fast_dtype(bf16, code, 2, 1 << opc, 1 << opc)
    _c.fast_set_dry_run(True)
    ar = vshmem.all_reduce
    k = args.iters
    names = ["py", "s4"]
    t = {name: [] for name in names}
    try:
        for j, f in enumerate((ar, s4_reduce)):          # both take the short path
            f(dst, src, "sum", stream=_StandInStream(0x1000 + j))
            want = (opc, code, y.ctypes.data, x.ctypes.data, n, 0x1000 + j, False)
            assert _c.fast_dry_run_last() == want, "the timed call left the short path"
        for r in range(args.rounds):
            for name in rotated(names, r):
                st = [0] * (k + 1)
                if name == "py":
                    st[0] = pc()
                    for i in range(1, k + 1):
                        ar(dst, src, "sum", stream=stream)
                        st[i] = pc()
                else:
                    st[0] = pc()
                    for i in range(1, k + 1):
                        s4_reduce(dst, src, "sum", stream=stream)
                        st[i] = pc()
                t[name].append(us(st))
    finally:
        _c.fast_set_dry_run(False)
        vshmem._fast_setup()
    if me == 0:
        print(f"# GPU short path without a GPU (stand-in tensors, dry run), {args.rounds} rounds x "
              f"{args.iters} calls, each call timed; median us per call [95% interval]")
        for name, what in (("py", "vshmem.all_reduce (native entry)"),
                           ("s4", "session 4's entry (Python def + fast_reduce)")):
            m, lo, hi = median_ci(flat(t[name]))
            print(f"{what:46} {m:7.3f} [{lo:.3f}, {hi:.3f}]")
        m, lo, hi = median_ci(paired(t["py"], t["s4"]))
        print(f"{'paired py - s4':46} {m:7.3f} [{lo:.3f}, {hi:.3f}]")
    vshmem.barrier_all()
    vshmem.free(y)
    vshmem.free(x)
    vshmem.finalize()


# --- the GPU run ------------------------------------------------------------------------------

def launch_floor(torch, stream, src, dst, me):
    """The pieces of the C call's host time, each timed per call from C++ (1 MiB buffers)."""
    w, st, k = _c.TEAM_WORLD, stream.cuda_stream, args.iters
    d, s = dst.data_ptr(), src.data_ptr()
    n1m, n64k = src.numel(), (64 << 10) // 2
    rows = [("empty kernel, <<<>>>", _c.TIME_EMPTY_LAUNCH, 0),
            ("empty kernel, cudaLaunchKernelEx", _c.TIME_EMPTY_LAUNCH_EX, 0),
            ("empty kernel, cuLaunchKernel (driver)", _c.TIME_EMPTY_LAUNCH_DRIVER, 0),
            ("shmemx_barrier_on_stream (1 launch)", _c.TIME_BARRIER, 0),
            ("all-reduce 64 KiB (1 launch)", _c.TIME_REDUCE, n64k),
            ("all-reduce 1 MiB (5 launches)", _c.TIME_REDUCE, n1m)]
    for _, what, nel in rows:                             # warm-up (first launches load kernels)
        _c.time_calls_from_c(what, w, 0, 11, d, s, nel, st, 3)
    t = {i: [] for i in range(len(rows))}
    for r in range(args.rounds):
        for i in rotated(list(range(len(rows))), r):
            vshmem.barrier_all()
            t[i].append(_c.time_calls_from_c(rows[i][1], w, 0, 11, d, s, rows[i][2], st, k)[0])
    if me == 0:
        print(f"# launch floor: host us per call from C++, median [95% interval] of "
              f"{args.rounds * k} calls")
        m = {}
        for i, (name, _, _) in enumerate(rows):
            m[i], lo, hi = median_ci(flat(t[i]))
            print(f"#   {name:38} {m[i]:7.2f} [{lo:.2f}, {hi:.2f}]")
        print(f"#   all-reduce 1 MiB - 5 x empty cudaLaunchKernelEx = {m[5] - 5 * m[1]:.2f} us, "
              f"64 KiB - 1 x = {m[4] - m[1]:.2f} us (the call's own host work); runtime over "
              f"driver per launch: {m[1] - m[2]:.2f} us")
    # The Python layer's pieces (no launch): the dry run of the call as shipped, the same in
    # place (the tensor read once), and torch's attribute reads alone, from Python (an upper
    # bound of what the native short path spends in torch: 2 tensors and the stream).
    ar = vshmem.all_reduce
    names = ["dry", "dry_inplace", "reads"]
    t = {name: [] for name in names}
    for r in range(args.rounds):
        for name in rotated(names, r):
            stamps = [0] * (k + 1)
            _c.fast_set_dry_run(name != "reads")
            if name == "dry":
                stamps[0] = pc()
                for i in range(1, k + 1):
                    ar(dst, src, "sum", stream=stream)
                    stamps[i] = pc()
            elif name == "dry_inplace":
                stamps[0] = pc()
                for i in range(1, k + 1):
                    ar(dst, dst, "sum", stream=stream)
                    stamps[i] = pc()
            else:
                stamps[0] = pc()
                for i in range(1, k + 1):
                    (dst.dtype, dst.is_contiguous(), dst.data_ptr(), dst.nbytes, src.dtype,
                     src.is_contiguous(), src.data_ptr(), src.nbytes, stream.cuda_stream)
                    stamps[i] = pc()
            _c.fast_set_dry_run(False)
            t[name].append(us(stamps))
    if me == 0:
        print("# the Python layer alone (no launch), us per call: dry run "
              f"{med(flat(t['dry'])):.2f}, in place {med(flat(t['dry_inplace'])):.2f}; torch's "
              f"attribute reads from Python (2 tensors + stream) {med(flat(t['reads'])):.2f}")


def gpu():
    import torch
    vshmem.init()
    me = vshmem.my_pe()
    torch.cuda.set_device(vshmem._state.heap_device)
    stream = torch.cuda.Stream()
    names = ["c", "py", "s4", "bind", "layer"]
    k = args.iters
    worst = None
    ar = vshmem.all_reduce
    for mib in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        if mib > args.max_mib:
            break
        n = mib * (1 << 20) // 2
        src = vshmem.empty(n, torch.bfloat16, device="cuda")
        dst = vshmem.empty(n, torch.bfloat16, device="cuda")
        src.normal_()
        torch.cuda.synchronize()
        vshmem.barrier_all()
        if mib == 1:
            launch_floor(torch, stream, src, dst, me)
            if me == 0:
                print(f"# {vshmem.n_pes()} PEs, {args.rounds} rounds x {k} calls per size and "
                      "variant, each call timed, order rotated per round; host us per call: "
                      "medians, py-c as the median of paired differences [95% interval] and "
                      "the mean difference")
                print(f"{'MiB':>5} {'c_host':>7} {'py_host':>7} {'py-c':>6} {'[95% interval]':>15} "
                      f"{'mean':>6} {'s4-c':>6} {'bind-c':>6} {'layer':>6} {'py_gpu':>8} "
                      f"{'c_gpu':>8}")
        d, s, st = dst.data_ptr(), src.data_ptr(), stream.cuda_stream
        w = _c.TEAM_WORLD
        for _ in range(3):                               # warm-up, every path
            ar(dst, src, "sum", stream=stream)
            s4_reduce(dst, src, "sum", stream=stream)
            _c.reduce_on_stream(w, 0, 11, d, s, n, st, False)
        _c.time_calls_from_c(_c.TIME_REDUCE, w, 0, 11, d, s, n, st, 3)
        stream.synchronize()
        host = {name: [] for name in names}
        gpu_us = {"c": [], "py": []}
        for r in range(args.rounds):
            for name in rotated(names, r):
                vshmem.barrier_all()
                if name == "c":
                    h, g = _c.time_calls_from_c(_c.TIME_REDUCE, w, 0, 11, d, s, n, st, k)
                    host["c"].append(h)
                    gpu_us["c"].append(g)
                    continue
                stamps = [0] * (k + 1)
                if name == "layer":
                    # The layer alone: every check of the call as shipped, nothing launched.
                    _c.fast_set_dry_run(True)
                    stamps[0] = pc()
                    for i in range(1, k + 1):
                        ar(dst, src, "sum", stream=stream)
                        stamps[i] = pc()
                    _c.fast_set_dry_run(False)
                    host["layer"].append(us(stamps))
                    continue
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record(stream)
                if name == "py":
                    stamps[0] = pc()
                    for i in range(1, k + 1):
                        ar(dst, src, "sum", stream=stream)
                        stamps[i] = pc()
                elif name == "s4":
                    stamps[0] = pc()
                    for i in range(1, k + 1):
                        s4_reduce(dst, src, "sum", stream=stream)
                        stamps[i] = pc()
                else:
                    f = _c.reduce_on_stream
                    stamps[0] = pc()
                    for i in range(1, k + 1):
                        f(w, 0, 11, d, s, n, st, False)
                        stamps[i] = pc()
                stop.record(stream)
                stop.synchronize()
                host[name].append(us(stamps))
                if name == "py":
                    gpu_us["py"].append(start.elapsed_time(stop) * 1e3 / k)
        pd = paired(host["py"], host["c"])
        m, lo, hi = median_ci(pd)
        if worst is None or m > worst[0]:
            worst = (m, hi, mib)
        if me == 0:
            print(f"{mib:>5} {med(flat(host['c'])):7.2f} {med(flat(host['py'])):7.2f} {m:6.2f} "
                  f"{f'[{lo:.2f}, {hi:.2f}]':>15} {statistics.fmean(pd):6.2f} "
                  f"{med(paired(host['s4'], host['c'])):6.2f} "
                  f"{med(paired(host['bind'], host['c'])):6.2f} {med(flat(host['layer'])):6.2f} "
                  f"{med(gpu_us['py']):8.1f} {med(gpu_us['c']):8.1f}", flush=True)
        torch.cuda.synchronize()
        vshmem.barrier_all()
        del d, s
        vshmem.free(dst)
        vshmem.free(src)
    if me == 0:
        print(f"# largest median Python - C: {worst[0]:.2f} us at {worst[2]} MiB, 95% interval up "
              f"to {worst[1]:.2f} (target <= 5): {'met' if worst[0] <= 5 else 'MISSED'}")
    vshmem.finalize()


host_proxy() if args.host else gpu_proxy() if args.proxy else gpu()
