"""Bad input raises a Python exception naming the PE, the call and the cause; the job goes on."""
import numpy as np
import pytest


def test_bad_pe(shmem):
    x = shmem.empty(4, np.int64)
    for pe in (-1, shmem.n_pes(), 10**6, 1.0, True, "0"):
        with pytest.raises(shmem.VshmemError, match=rf"PE {shmem.my_pe()}: vshmem.put: PE {pe!r} is not a PE"):
            shmem.put(x, np.zeros(4, np.int64), pe)
    shmem.barrier_all()
    shmem.free(x)


def test_not_symmetric(shmem):
    local = np.zeros(4, np.int64)
    with pytest.raises(shmem.VshmemError, match="dest .* is not symmetric"):
        shmem.put(local, np.ones(4, np.int64), 0)
    with pytest.raises(shmem.VshmemError, match="source .* is not symmetric"):
        shmem.get(np.ones(4, np.int64), local, 0)
    with pytest.raises(shmem.VshmemError, match="not symmetric"):
        shmem.reduce(local, local)


def test_size_and_dtype_mismatch(shmem):
    x = shmem.empty(8, np.int32)
    with pytest.raises(shmem.VshmemError, match="sizes must match"):
        shmem.put(x, np.zeros(4, np.int32), 0)
    with pytest.raises(shmem.VshmemError, match="dtypes must match"):
        shmem.put(x, np.zeros(8, np.float32), 0)
    y = shmem.empty(8 * shmem.n_pes() + 1, np.int32)
    with pytest.raises(shmem.VshmemError, match="dest must hold"):
        shmem.fcollect(y, x)
    with pytest.raises(shmem.VshmemError, match="op must be"):
        shmem.reduce(x, x, "mean")
    f = shmem.empty(8, np.float32)
    with pytest.raises(shmem.VshmemError, match="no xor reduction of float32"):
        shmem.reduce(f, f, "xor")
    shmem.free(f)
    with pytest.raises(shmem.VshmemError, match="root 99"):
        shmem.broadcast(x, x, root=99)
    with pytest.raises(ValueError, match="contiguous"):
        shmem.put(x[::2], np.zeros(4, np.int32), 0)
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)


def test_sizes_disagree(shmem):
    # Every PE raises, none allocates: the heap stays symmetric.
    if shmem.n_pes() > 1:
        with pytest.raises(shmem.VshmemError, match="PEs disagree on the size"):
            shmem.empty(10 + shmem.my_pe(), np.int8)
    x = shmem.empty(4, np.int64)
    addrs = np.zeros(shmem.n_pes(), np.int64)
    src = shmem.empty(1, np.int64)
    src[0] = x.ctypes.data
    out = shmem.empty(shmem.n_pes(), np.int64)
    shmem.barrier_all()
    shmem.fcollect(out, src)
    addrs[:] = out
    assert (addrs == addrs[0]).all()
    shmem.barrier_all()
    for a in (out, src, x):
        shmem.free(a)


def test_wrong_device_and_bad_signal(shmem):
    with pytest.raises(shmem.VshmemError, match="heap is host memory"):
        shmem.empty(4, np.float32, device="cuda")
    with pytest.raises(ValueError, match="device must be"):
        shmem.empty(4, np.float32, device="tpu")
    sig = shmem.empty(1, np.int32)
    with pytest.raises(shmem.VshmemError, match="uint64"):
        shmem.signal_fetch(sig)
    sig64 = shmem.empty(1, np.uint64)
    with pytest.raises(shmem.VshmemError, match="cmp must be"):
        shmem.signal_wait_until(sig64, "around", 3)
    with pytest.raises(TypeError, match="stream must be"):
        shmem.barrier_all(stream="fast")
    shmem.barrier_all()
    shmem.free(sig64)
    shmem.free(sig)


def test_team_errors(shmem):
    with pytest.raises(shmem.VshmemError, match="predefined"):
        shmem.team_world().destroy()
    with pytest.raises(shmem.VshmemError):
        shmem.team_world().split_strided(0, 1, shmem.n_pes() + 5)
    shmem.barrier_all()


def test_free_twice_and_finalize_with_views(shmem):
    x = shmem.empty(4, np.int64)
    shmem.free(x)
    with pytest.raises(shmem.VshmemError, match="not symmetric"):
        shmem.free(x)
    y = shmem.empty(4, np.int64)
    keep = shmem.peer_view(y, shmem.my_pe())
    with pytest.raises(shmem.VshmemError, match="still holds views"):
        shmem.finalize()
    del keep
    shmem.free(y)


class _FakeCudaTensor:
    """Looks like a CUDA torch.Tensor to the package (data_ptr, nbytes, dtype, is_cuda)."""
    dtype = np.dtype(np.int64)
    nbytes = 32
    is_cuda = True

    def data_ptr(self):
        return 4096

    def is_contiguous(self):
        return True


def test_gpu_tensor_on_host_heap(shmem):
    x = shmem.empty(4, np.int64)
    with pytest.raises(shmem.VshmemError, match="GPU tensor cannot take part"):
        shmem.put(x, _FakeCudaTensor(), 0)
    with pytest.raises(shmem.VshmemError, match="GPU tensor cannot take part"):
        shmem.get(_FakeCudaTensor(), x, 0)
    shmem.barrier_all()
    shmem.free(x)


def _everyone(shmem, local):
    """Every PE's `local` (int64), as rows in PE order."""
    n = local.size
    src = shmem.empty(n, np.int64)
    out = shmem.empty(n * shmem.n_pes(), np.int64)
    src[:] = local
    shmem.barrier_all()
    shmem.fcollect(out, src)
    rows = out.reshape(shmem.n_pes(), n).copy()
    shmem.barrier_all()
    shmem.free(out)
    shmem.free(src)
    return rows


def test_reduce_fast_path_falls_back_with_the_same_checks(shmem, rng):
    """reduce's short path (C-contiguous NumPy arrays, world team) takes only what it can check
    cheaply; everything else gets the general path's messages, and nothing is reduced."""
    x = shmem.empty(64, np.int64)
    y = shmem.empty(64, np.int64)
    x[:] = rng.integers(-(1 << 40), 1 << 40, 64)
    y[:] = -7
    rows = _everyone(shmem, x)
    shmem.barrier_all()
    assert shmem._fast_reduce(y, x, "sum", None, False) is True
    assert (y == rows.sum(0)).all()
    y[:] = -7
    shmem.barrier_all()
    # An op name that is not the interned literal, and min.
    assert shmem._fast_reduce(y, x, "".join(["m", "in"]), None, False) is True
    assert (y == rows.min(0)).all()
    shmem.barrier_all()
    y[:] = rows.min(0)
    assert shmem._fast_reduce(y, x, "sum", 0, False) is False      # the host heap takes no stream
    assert shmem._fast_reduce(y, x, 3, None, False) is False       # not an op name
    assert shmem._fast_reduce(y, x, "xor", None, True) is False    # no host reduce-scatter here
    assert shmem._fast_reduce(y, x.view(np.uint64), "sum", None, False) is False
    assert shmem._fast_reduce(y, x.view(">i8"), "sum", None, False) is False
    assert (y == rows.min(0)).all()
    shmem.barrier_all()
    with pytest.raises(ValueError, match="contiguous"):
        shmem.reduce(y[::2], x[::2], "sum")
    with pytest.raises(shmem.VshmemError, match="overlap"):
        shmem.reduce(x[1:], x[:-1], "sum")
    with pytest.raises(shmem.VshmemError, match="not symmetric"):
        shmem.reduce(y, np.zeros(64, np.int64), "sum")
    with pytest.raises(shmem.VshmemError, match="must match"):
        shmem.reduce(y, x.view(np.float64), "sum")
    with pytest.raises(shmem.VshmemError, match="op must be"):
        shmem.reduce(y, x, "mean")
    assert shmem._fast_reduce(y, np.zeros(64, np.int64), "sum", None, False) is False
    assert (y == rows.min(0)).all()
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)


def test_short_path_forgets_freed_memory(shmem, rng):
    """The native short path keeps its own copy of the allocation table: memory freed (or never
    allocated) is refused there, and the general path says why."""
    x = shmem.empty(64, np.int64)
    y = shmem.empty(64, np.int64)
    table = dict(shmem._c.fast_allocations())
    assert table[x.ctypes.data] >= x.nbytes and table[y.ctypes.data] >= y.nbytes
    x[:] = rng.integers(0, 1 << 40, 64)
    shmem.barrier_all()
    shmem.free(y)
    assert y.ctypes.data not in dict(shmem._c.fast_allocations())
    y[:] = -3
    assert shmem._fast_reduce(y, x, "sum", None, False) is False
    assert shmem._fast_reduce(x, y, "sum", None, False) is False
    with pytest.raises(shmem.VshmemError, match="dest .* is not symmetric"):
        shmem.reduce(y, x, "sum")
    assert (y == -3).all()
    shmem.barrier_all()
    shmem.free(x)


def test_reduce_is_native_and_binds_like_its_signature(shmem, rng):
    """vshmem.reduce / all_reduce / reduce_scatter are native functions (no Python frame before
    the short path) that bind their arguments as the Python signature did: positional or by
    keyword, defaults op='sum', team=None, stream=None; whatever does not bind plainly, or needs
    the general path, reaches the general path with the arguments as given."""
    import inspect
    for f, name in ((shmem.reduce, "reduce"), (shmem.reduce_scatter, "reduce_scatter")):
        assert inspect.isbuiltin(f) and f.__name__ == name and f.__module__ == "vshmem"
        sig = inspect.signature(f)
        assert list(sig.parameters) == ["dest", "source", "op", "team", "stream"]
        assert [p.default for p in sig.parameters.values()][2:] == ["sum", None, None]
    assert shmem.all_reduce is shmem.reduce
    assert shmem.reduce.__self__ is shmem._reduce_general
    x = shmem.empty(32, np.int64)
    y = shmem.empty(32, np.int64)
    x[:] = rng.integers(-(1 << 40), 1 << 40, 32)
    rows = _everyone(shmem, x)
    want = {"sum": rows.sum(0), "min": rows.min(0), "max": rows.max(0)}
    calls = [
        ("sum", lambda: shmem.reduce(y, x)),
        ("sum", lambda: shmem.all_reduce(dest=y, source=x)),
        ("max", lambda: shmem.reduce(y, x, op="max")),
        ("min", lambda: shmem.reduce(y, source=x, stream=None, op="min", team=None)),
        ("max", lambda: shmem.reduce(y, x, "max", None, None)),
        ("min", lambda: shmem.reduce(y, x, "min", shmem.team_world())),    # the general path
        ("sum", lambda: shmem.reduce(source=x, dest=y, team=shmem.team_world())),
    ]
    for i, (op, call) in enumerate(calls):
        y[:] = -(i + 1)
        shmem.barrier_all()
        assert call() is None, i
        assert (y == want[op]).all(), i
        shmem.barrier_all()
    y[:] = x                                                    # in place
    shmem.barrier_all()
    assert shmem.all_reduce(y, y, "max") is None
    assert (y == want["max"]).all()
    shmem.barrier_all()
    y[:] = -99
    with pytest.raises(TypeError, match=r"reduce\(\) got an unexpected keyword argument 'bogus'"):
        shmem.reduce(y, x, bogus=1)
    with pytest.raises(TypeError, match="multiple values for argument 'dest'"):
        shmem.reduce(y, x, dest=y)
    with pytest.raises(TypeError, match="positional argument"):
        shmem.reduce(y, x, "sum", None, None, 1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'source'"):
        shmem.reduce(y)
    with pytest.raises(TypeError, match=r"reduce_scatter\(\) got an unexpected keyword"):
        shmem.reduce_scatter(y, x, stream=None, nope=2)
    with pytest.raises(shmem.VshmemError, match="op must be"):
        shmem.reduce(y, x, op="mean")
    assert (y == -99).all()
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)


class _StandInTensor:
    """What the GPU short path reads of a torch.Tensor: dtype, is_contiguous(), data_ptr(),
    nbytes."""

    def __init__(self, addr, nbytes, dtype, contiguous=True):
        self.dtype = dtype
        self.nbytes = nbytes
        self._addr = addr
        self._contiguous = contiguous

    def data_ptr(self):
        return self._addr

    def is_contiguous(self):
        return self._contiguous


class _Stream:
    def __init__(self, handle):
        self.cuda_stream = handle


class _ProtocolStream:
    def __cuda_stream__(self):
        return (0, 77)


def test_gpu_short_path_without_a_gpu(shmem, rng):
    """The GPU heap's native short path, configured as on a GPU over host-heap memory and run dry
    (every check, the call recorded instead of made): what it takes, what it passes on, and what it
    leaves to the general path."""
    c, n = shmem._c, shmem.n_pes()
    bf16, f32 = type("bf16", (), {})(), type("f32", (), {})()
    code_bf16, code_f32 = shmem._dtypes.CODE["bfloat16"], shmem._dtypes.CODE["float32"]
    ops = shmem._dtypes.OPS
    asked = []

    def current(device):
        asked.append(device)
        return 0xC0DE

    nelem = 200                     # the same on every PE (empty is collective)
    x = shmem.empty(nelem * n, np.uint16)
    y = shmem.empty(nelem * n, np.uint16)
    xa, ya = x.ctypes.data, y.ctypes.data
    try:
        c.fast_configure(True, n, current, 3)
        c.fast_dtype(bf16, code_bf16, 2, 0b1111, 0b0001)
        c.fast_dtype(f32, code_f32, 4, 0b1111, 0b1111)
        c.fast_set_dry_run(True)

        def t(addr, nbytes, dtype=bf16, contiguous=True):
            return _StandInTensor(addr, nbytes, dtype, contiguous)

        half = nelem * n
        u = object()
        d, s = t(ya, 2 * half), t(xa, 2 * half)
        assert c.fast_reduce(d, s, "max", _Stream(0x51), False) is True
        assert c.fast_dry_run_last() == (ops["max"], code_bf16, ya, xa, half, 0x51, False)
        assert c.fast_reduce(d, s, "sum", None, False) is True          # the current stream
        assert asked == [3] and c.fast_dry_run_last()[5] == 0xC0DE
        assert c.fast_reduce(d, d, "prod", 12345, False) is True        # in place, int stream
        assert c.fast_dry_run_last() == (ops["prod"], code_bf16, ya, ya, half, 12345, False)
        # reduce-scatter: source holds n blocks of dest's size
        blk = t(ya + 2 * nelem, 2 * nelem)
        assert c.fast_reduce(blk, s, "sum", 5, True) is True
        assert c.fast_dry_run_last() == (ops["sum"], code_bf16, ya + 2 * nelem, xa, nelem, 5, True)
        assert c.fast_reduce(blk, s, "max", 5, True) is False           # no such reduce-scatter
        f = t(ya, 2 * half, f32)
        assert c.fast_reduce(f, t(xa, 2 * half, f32), "max", 5, True) is False  # sizes
        refused = [
            (t(ya, 2 * half, contiguous=False), s, "sum", 1),
            (d, t(xa, 2 * half, contiguous=False), "sum", 1),
            (d, t(xa, 2 * half, f32), "sum", 1),                          # dtypes differ
            (t(ya, 2 * half, u), t(xa, 2 * half, u), "sum", 1),          # unknown dtype
            (d, s, "xor", 1),                                             # no such reduction
            (d, s, "mean", 1),
            (d, t(xa, 2 * half - 2), "sum", 1),                           # sizes differ
            (t(xa + 2, 2 * half - 2), t(xa, 2 * half - 2), "sum", 1),    # overlap
            (d, t(xa + 2, 2 * half), "sum", 1),                           # past the allocation
            (d, t(0x1000, 2 * half), "sum", 1),                           # not symmetric
            (t(ya, 0), t(xa, 0), "sum", 1),                               # nothing to reduce
            (d, s, "sum", True),                                          # a bool is no stream
            (d, s, "sum", -1),
            (d, s, "sum", _ProtocolStream()),                             # the general path's
            (d, s, "sum", "stream"),
            (np.zeros(4), np.zeros(4), "sum", 1),                          # not a tensor
        ]
        before = c.fast_dry_run_last()
        for i, (dd, ss, op, st) in enumerate(refused):
            assert c.fast_reduce(dd, ss, op, st, False) is False, i
        assert c.fast_dry_run_last() == before

        class Broken(_StandInTensor):
            def data_ptr(self):
                raise RuntimeError("the tensor's own error")

        with pytest.raises(RuntimeError, match="the tensor's own error"):
            c.fast_reduce(Broken(ya, 2 * half, bf16), s, "sum", 1, False)
        c.fast_set_dry_run(False)
        # Without a current-stream function (no torch) the call is made on stream 0: without CUDA
        # that raises the build's message.
        c.fast_configure(True, n, None, 0)
        c.fast_dtype(f32, code_f32, 4, 0b1111, 0b1111)
        if not shmem.HAVE_CUDA:
            with pytest.raises(shmem.VshmemError, match="built without CUDA"):
                c.fast_reduce(t(ya, 2 * half, f32), t(xa, 2 * half, f32), "sum", None, False)
    finally:
        c.fast_set_dry_run(False)
        shmem._fast_setup()
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)


def test_gpu_native_entry_without_a_gpu(shmem):
    """The native vshmem.reduce / reduce_scatter on the GPU heap's short path (configured as on a
    GPU over host-heap memory, dry run): every way of passing the arguments reaches the same call,
    and what the short path declines goes to the general path."""
    c, n = shmem._c, shmem.n_pes()
    bf16 = type("bf16", (), {})()
    code = shmem._dtypes.CODE["bfloat16"]
    ops = shmem._dtypes.OPS
    nelem = 64
    x = shmem.empty(nelem * n, np.uint16)
    y = shmem.empty(nelem * n, np.uint16)
    xa, ya = x.ctypes.data, y.ctypes.data
    half = nelem * n
    d, s = _StandInTensor(ya, 2 * half, bf16), _StandInTensor(xa, 2 * half, bf16)
    blk = _StandInTensor(ya, 2 * nelem, bf16)
    try:
        c.fast_configure(True, n, lambda device: 0xC0DE, 3)
        c.fast_dtype(bf16, code, 2, 0b1111, 0b0001)
        c.fast_set_dry_run(True)
        cases = [
            (lambda: shmem.reduce(d, s, "max", stream=_Stream(0x51)), ("max", 0x51, False)),
            (lambda: shmem.all_reduce(dest=d, source=s, op="prod", stream=7), ("prod", 7, False)),
            (lambda: shmem.reduce(d, s), ("sum", 0xC0DE, False)),              # current stream
            (lambda: shmem.reduce(d, s, "min", None, 9), ("min", 9, False)),
            (lambda: shmem.reduce(s, d, team=None, stream=11), ("sum", 11, False)),
            (lambda: shmem.reduce_scatter(blk, s, stream=5), ("sum", 5, True)),
            (lambda: shmem.reduce_scatter(source=s, dest=blk, op="sum", stream=6),
             ("sum", 6, True)),
        ]
        for i, (call, (op, stream, scatter)) in enumerate(cases):
            assert call() is None, i
            dd, ss, count = (blk, s, nelem) if scatter else (d, s, half)
            if i == 4:
                dd, ss = s, d
            want = (ops[op], code, dd.data_ptr(), ss.data_ptr(), count, stream, scatter)
            assert c.fast_dry_run_last() == want, i
        # In place (as torch.distributed's all_reduce): the tensor is read once.
        reads = []

        class Counted(_StandInTensor):
            def is_contiguous(self):
                reads.append(self)
                return True

        inplace = Counted(ya, 2 * half, bf16)
        assert shmem.reduce(inplace, inplace, stream=3) is None
        assert reads == [inplace]
        assert c.fast_dry_run_last() == (ops["sum"], code, ya, ya, half, 3, False)
        before = c.fast_dry_run_last()
        # Declined by the short path: the general path gets the call (and, on this host heap,
        # refuses the stand-ins with its own message).
        with pytest.raises(ValueError, match="vshmem.reduce: dest must be contiguous"):
            shmem.reduce(_StandInTensor(ya, 2 * half, bf16, contiguous=False), s, stream=1)
        # The general path gets exactly what the caller passed: an entry made over a recorder.
        got = []

        def general(*a, **k):
            got.append((a, k))
            return "general"

        r, rs = c.native_reduce(general, False), c.native_reduce(general, True)
        nc = _StandInTensor(ya, 2 * half, bf16, contiguous=False)
        tw = shmem.team_world()
        declined = [
            (lambda: rs(blk, s, "max", stream=5), ((blk, s, "max"), {"stream": 5})),  # no such op
            (lambda: r(d, s, team=tw, stream=1), ((d, s), {"team": tw, "stream": 1})),
            (lambda: r(nc, s, stream=1), ((nc, s), {"stream": 1})),
            (lambda: r(d, s, "sum", None, _ProtocolStream()), None),
            (lambda: r(d, s, bogus=1), ((d, s), {"bogus": 1})),
            (lambda: r(d, s, dest=d), ((d, s), {"dest": d})),
            (lambda: r(d, s, "sum", None, None, 1), ((d, s, "sum", None, None, 1), {})),
            (lambda: r(d), ((d,), {})),
            (lambda: r(source=s, stream=1), ((), {"source": s, "stream": 1})),
        ]
        for i, (call, want) in enumerate(declined):
            assert call() == "general", i
            assert want is None or got[-1] == want, i
        assert len(got) == len(declined)
        assert r(d, s, stream=2) is None and len(got) == len(declined)      # taken: not passed on
        assert c.fast_dry_run_last() == (ops["sum"], code, ya, xa, half, 2, False)
        before = c.fast_dry_run_last()
        with pytest.raises(TypeError, match="general must be callable"):
            c.native_reduce(3, False)
        assert c.fast_dry_run_last() == before
    finally:
        c.fast_set_dry_run(False)
        shmem._fast_setup()
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)
