"""bf16 all-reduce on the GPU heap, 1-256 MiB: the same on-stream call timed from Python and from
C++ in one run (issue #20: the Python layer adds at most 5 us a call).
    vshmemrun -n 2 -- python3 bench/python_allreduce.py [--iters 20] [--rounds 9]

Per size, `--rounds` rounds; each round times one batch of `--iters` calls of every variant, back
to back, in an order that rotates from round to round (no variant always runs first or after
another); every PE passes a barrier before each batch, and each batch ends with the stream
drained (CUDA events around it give the GPU time per call). Variants:
  c       the extension's C++ loop over shmemx_bfloat16_sum_reduce_on_stream (the reference)
  py      vshmem.all_reduce(dst, src, "sum", stream=s): the package as shipped
  before  the package's short path as it was in run 15 (Python code, copied below), calling the
          pybind11 binding reduce_on_stream: the "before" of the native short path
  bind    the bare pybind11 binding reduce_on_stream(...) with ready integers in a Python loop:
          the floor of any pybind11 path (dispatch, the loop, the cache effects of interpreting
          between launches)
  layer   vshmem.all_reduce with the short path's dry run on: every check, no launch (what the
          Python layer costs by itself on this CPU; no GPU work)
The table gives MEDIANS over rounds of host us per call and of the paired differences to c.
Sizes of 64 MiB and more use a quarter of the calls per batch.

--host: the CPU proxy on the host heap (VSHMEM_BACKEND=host, NumPy, int64 sum of 8 elements):
vshmem.reduce, run 15's Python short path, the bare binding _c.reduce, and the dry run.
--proxy: the GPU short path's Python cost without a GPU (host heap, any backend): stand-in
tensors whose data_ptr/is_contiguous are C callables, as torch's are; the native short path in
dry run against run 15's Python short path with its final call replaced by a C builtin (so its
pybind11 dispatch is NOT counted: the before figure is a lower bound)."""
import argparse
import itertools
import statistics
import sys
import time

import vshmem

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=20)
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--host", action="store_true")
ap.add_argument("--proxy", action="store_true")
ap.add_argument("--max-mib", type=int, default=256)
args = ap.parse_args()
_c = vshmem._c


# --- run 15's short paths, as they were in python/vshmem/__init__.py (the "before") ---------

_BEFORE_GPU = {}


def _before_gpu_table():
    torch = sys.modules.get("torch")
    dt, size = vshmem._dtypes, vshmem._dtypes.SIZE
    for name, code in dt.CODE.items():
        tdt = getattr(torch, name, None)
        if tdt is None or dt.name_of(tdt) != name:
            continue
        for op, opc in dt.OPS.items():
            for scatter in (False, True):
                if (code, opc, scatter) in vshmem._STREAM_REDUCE:
                    _BEFORE_GPU[(tdt, op, scatter)] = (opc, code, size[name])


def _before_gpu_reduce_fast(dest, source, op, stream, scatter, _find=vshmem._find,
                            _state=vshmem._state):
    if not _BEFORE_GPU:
        _before_gpu_table()
    try:
        dt = dest.dtype
        key = _BEFORE_GPU.get((dt, op, scatter))
        if key is None or source.dtype is not dt or not (dest.is_contiguous() and
                                                          source.is_contiguous()):
            return False
        da, sa = dest.data_ptr(), source.data_ptr()
        dn, sn = dest.nbytes, source.nbytes
    except (AttributeError, TypeError):
        return False
    if scatter:
        if sn != dn * _state.npes or (da < sa + sn and sa < da + dn):
            return False
    elif dn != sn or (da != sa and da < sa + sn and sa < da + dn):
        return False
    if dn == 0 or _find(da, dn) is None or _find(sa, sn) is None:
        return False
    if stream is None:
        st = vshmem._current_stream()
    elif type(stream) is int:
        st = stream
    else:
        st = vshmem._stream_handle(stream)
    _c.reduce_on_stream(_c.TEAM_WORLD, key[0], key[1], da, sa, dn // key[2], st, scatter)
    return True


_BEFORE_HOST = {}


def _before_host_reduce_fast(dest, source, op, _find=vshmem._find):
    di = _c.array_info(dest)
    si = _c.array_info(source)
    if di is None or si is None or not (di[2] and si[2]):
        return False
    dt = dest.dtype
    if not _BEFORE_HOST:
        import numpy as np
        for name, code in vshmem._dtypes.CODE.items():
            if name == "bfloat16":
                continue
            for o, opc in vshmem._dtypes.OPS.items():
                if _c.has_host_reduce(code, opc):
                    _BEFORE_HOST[(np.dtype(name), o)] = (opc, code, vshmem._dtypes.SIZE[name])
    key = _BEFORE_HOST.get((dt, op))
    if key is None or source.dtype != dt:
        return False
    da, dn, sa, sn = di[0], di[1], si[0], si[1]
    if dn != sn or dn == 0 or (da != sa and da < sa + sn and sa < da + dn):
        return False
    if _find(da, dn) is None or _find(sa, sn) is None:
        return False
    _c.reduce(_c.TEAM_WORLD, key[0], key[1], da, sa, dn // key[2])
    return True


def before_reduce(dest, source, op="sum", team=None, stream=None):
    """run 15's vshmem.reduce on the short path (the general path is not timed here)."""
    if team is None and (_before_gpu_reduce_fast(dest, source, op, stream, False)
                         if vshmem._state.heap_gpu else _before_host_reduce_fast(dest, source, op)):
        return
    raise RuntimeError("the benchmark's arguments left run 15's short path")


# --- timing -----------------------------------------------------------------------------------

def rotated(names, r):
    k = r % len(names)
    return names[k:] + names[:k]


def med(xs):
    return statistics.median(xs)


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

    def loop(name):
        if name == "py" or name == "layer":
            f = vshmem.reduce
            for _ in range(args.iters):
                f(dst, src, "sum")
        elif name == "before":
            for _ in range(args.iters):
                before_reduce(dst, src, "sum")
        else:
            for _ in range(args.iters):
                _c.reduce(_c.TEAM_WORLD, opc, code, b, a, 8)

    names = ["py", "before", "bind", "layer"]
    t = {n: [] for n in names}
    for r in range(args.rounds):
        for name in rotated(names, r):
            vshmem.barrier_all()
            _c.fast_set_dry_run(name == "layer")
            t0 = time.perf_counter()
            loop(name)
            t1 = time.perf_counter()
            _c.fast_set_dry_run(False)
            t[name].append((t1 - t0) * 1e6 / args.iters)
    if me == 0:
        print(f"# host heap, {vshmem.n_pes()} PEs, {args.rounds} rounds x {args.iters} calls; "
              "median us per call")
        print(f"vshmem.reduce {med(t['py']):.2f}  run-15 short path {med(t['before']):.2f}  "
              f"_c.reduce {med(t['bind']):.2f}  dry run (layer alone) {med(t['layer']):.2f}")
        print(f"python layer: now {med(t['py']) - med(t['bind']):.2f}, run 15 "
              f"{med(t['before']) - med(t['bind']):.2f} us")
    vshmem.barrier_all()
    vshmem.free(dst)
    vshmem.free(src)
    vshmem.finalize()


class _StandIn:
    """A tensor as the short paths see one: C callables for data_ptr/is_contiguous (torch's are C
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
    _BEFORE_GPU[(bf16, "sum", False)] = (opc, code, 2)
    heap_gpu, vshmem._state.heap_gpu = vshmem._state.heap_gpu, True
    real = _c.reduce_on_stream
    _c.reduce_on_stream = max                          # a C builtin taking 8 integers
    ar = vshmem.all_reduce
    names = ["py", "before"]
    t = {k: [] for k in names}
    try:
        assert _c.fast_reduce(dst, src, "sum", stream, False) is True
        for r in range(args.rounds):
            for name in rotated(names, r):
                f = ar if name == "py" else before_reduce
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    f(dst, src, "sum", stream=stream)
                t1 = time.perf_counter()
                t[name].append((t1 - t0) * 1e6 / args.iters)
    finally:
        _c.reduce_on_stream = real
        vshmem._state.heap_gpu = heap_gpu
        _c.fast_set_dry_run(False)
        vshmem._fast_setup()
    if me == 0:
        print(f"# GPU short path without a GPU (stand-in tensors), {args.rounds} rounds x "
              f"{args.iters} calls; median us per call")
        print(f"native short path (dry run) {med(t['py']):.2f}  run-15 Python short path "
              f"(final call a C builtin) {med(t['before']):.2f}")
    vshmem.barrier_all()
    vshmem.free(y)
    vshmem.free(x)
    vshmem.finalize()


def gpu():
    import torch
    vshmem.init()
    me = vshmem.my_pe()
    torch.cuda.set_device(vshmem._state.heap_device)
    stream = torch.cuda.Stream()
    names = ["c", "py", "before", "bind"]
    if me == 0:
        print(f"# {vshmem.n_pes()} PEs, {args.rounds} rounds x {args.iters} calls per size "
              "(a quarter from 64 MiB), order rotated per round; median us per call")
        print(f"{'MiB':>5} {'c_host':>8} {'py_host':>8} {'py-c':>7} {'before-c':>8} "
              f"{'bind-c':>7} {'layer':>6} {'py_gpu':>8} {'c_gpu':>8}")
    worst, worst_before = 0.0, 0.0
    ar = vshmem.all_reduce
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
        d, s, st = dst.data_ptr(), src.data_ptr(), stream.cuda_stream
        for _ in range(3):                               # warm-up, every path
            ar(dst, src, "sum", stream=stream)
            before_reduce(dst, src, "sum", stream=stream)
            _c.reduce_on_stream(_c.TEAM_WORLD, 0, 11, d, s, n, st, False)
        stream.synchronize()
        host = {k: [] for k in names + ["layer"]}
        gpu_us = {"c": [], "py": []}
        for r in range(args.rounds):
            for name in rotated(names, r):
                vshmem.barrier_all()
                if name == "c":
                    h, g = _c.time_reduce_from_c(_c.TEAM_WORLD, 0, 11, d, s, n, st, iters)
                    host["c"].append(h)
                    gpu_us["c"].append(g)
                    continue
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record(stream)
                if name == "py":
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        ar(dst, src, "sum", stream=stream)
                    t1 = time.perf_counter()
                elif name == "before":
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        before_reduce(dst, src, "sum", stream=stream)
                    t1 = time.perf_counter()
                else:
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        _c.reduce_on_stream(_c.TEAM_WORLD, 0, 11, d, s, n, st, False)
                    t1 = time.perf_counter()
                stop.record(stream)
                stop.synchronize()
                host[name].append((t1 - t0) * 1e6 / iters)
                if name == "py":
                    gpu_us["py"].append(start.elapsed_time(stop) * 1e3 / iters)
            # The layer alone: every check of the call as shipped, nothing launched.
            _c.fast_set_dry_run(True)
            t0 = time.perf_counter()
            for _ in range(iters):
                ar(dst, src, "sum", stream=stream)
            t1 = time.perf_counter()
            _c.fast_set_dry_run(False)
            host["layer"].append((t1 - t0) * 1e6 / iters)
        diff = {k: med([a - b for a, b in zip(host[k], host["c"])]) for k in ("py", "before",
                                                                              "bind")}
        worst = max(worst, diff["py"])
        worst_before = max(worst_before, diff["before"])
        if me == 0:
            print(f"{mib:>5} {med(host['c']):8.2f} {med(host['py']):8.2f} {diff['py']:7.2f} "
                  f"{diff['before']:8.2f} {diff['bind']:7.2f} {med(host['layer']):6.2f} "
                  f"{med(gpu_us['py']):8.1f} {med(gpu_us['c']):8.1f}", flush=True)
        torch.cuda.synchronize()
        vshmem.barrier_all()
        del d, s
        vshmem.free(dst)
        vshmem.free(src)
    if me == 0:
        print(f"# largest median Python - C: {worst:.2f} us (target <= 5): "
              f"{'met' if worst <= 5 else 'MISSED'}; run 15's short path in the same run: "
              f"{worst_before:.2f} us")
    vshmem.finalize()


host_proxy() if args.host else gpu_proxy() if args.proxy else gpu()
