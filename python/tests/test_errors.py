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
