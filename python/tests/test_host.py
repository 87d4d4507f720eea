"""The host heap with NumPy (VSHMEM_BACKEND=host), under vshmemrun or mpirun with any PE count."""
import numpy as np
import pytest


def ref_all(shmem, local):
    """Every PE's `local` (int64 array of the same shape), gathered through fcollect."""
    src = shmem.empty(local.shape, local.dtype)
    src[...] = local
    out = shmem.empty((shmem.n_pes(),) + local.shape, local.dtype)
    out[...] = -7
    shmem.barrier_all()
    shmem.fcollect(out, src)
    result = out.copy()
    shmem.free(out)
    shmem.free(src)
    return result


def test_ids(shmem):
    assert 0 <= shmem.my_pe() < shmem.n_pes()
    assert shmem.team_world().n_pes() == shmem.n_pes()
    assert shmem.team_world().my_pe() == shmem.my_pe()


def test_zeros(shmem):
    z = shmem.zeros((2, 3), np.int16)
    assert z.shape == (2, 3) and z.dtype == np.int16 and not z.any()
    shmem.free(z)


def test_same_address(shmem):
    x = shmem.empty((3, 5), np.float64)
    assert isinstance(x, np.ndarray) and x.shape == (3, 5) and x.dtype == np.float64
    addrs = ref_all(shmem, np.array([x.ctypes.data], dtype=np.int64))
    assert (addrs == addrs[0]).all()
    assert shmem.is_symmetric(x) and not shmem.is_symmetric(np.zeros(3))
    shmem.free(x)


def test_put_get_ring(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    for dtype in (np.int8, np.int32, np.uint64, np.float32, np.float64):
        data = (rng.integers(1, 100, size=1000)).astype(dtype)
        box = shmem.empty(1000, dtype)
        box[:] = 0
        shmem.barrier_all()
        shmem.put(box, data, np.int32((me + 1) % n))     # NumPy integers are PE numbers too
        shmem.barrier_all()
        everyone = ref_all(shmem, data.astype(np.int64))
        assert (box.astype(np.int64) == everyone[(me - 1) % n]).all()
        back = np.full(1000, 99, dtype)
        shmem.get(back, box, (me + 1) % n)
        assert (back == data).all()
        shmem.barrier_all()
        shmem.free(box)


def test_nbi_and_quiet(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    data = rng.standard_normal(4096)
    box = shmem.empty(4096, np.float64)
    box[:] = np.nan
    shmem.barrier_all()
    shmem.put_nbi(box, data, (me + 1) % n)
    shmem.quiet()
    shmem.barrier_all()
    got = np.empty(4096)
    shmem.get_nbi(got, box, me)
    shmem.quiet()
    everyone = ref_all(shmem, data.view(np.int64))
    assert (got.view(np.int64) == everyone[(me - 1) % n]).all()
    shmem.barrier_all()
    shmem.free(box)


def test_put_signal(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    data = rng.integers(0, 1 << 40, size=257)
    box = shmem.empty(257, np.int64)
    sig = shmem.empty(1, np.uint64)
    box[:] = -1
    sig[0] = 0
    shmem.barrier_all()
    shmem.put_signal(box, data, sig, 5, (me + 1) % n, op="add")
    seen = shmem.signal_wait_until(sig, "ge", 5)
    assert seen == 5 and shmem.signal_fetch(sig) == 5
    shmem.barrier_all()
    # The second put adds 5 more; the polling form sees it too, and times out on what never comes.
    shmem.put_signal(box, data, sig, 5, (me + 1) % n, op="add")
    assert shmem.signal_wait_until(sig, "eq", 10, timeout=30) == 10
    with pytest.raises(TimeoutError, match="still 10"):
        shmem.signal_wait_until(sig, "gt", 10, timeout=0.05)
    everyone = ref_all(shmem, data)
    assert (box == everyone[(me - 1) % n]).all()
    shmem.barrier_all()
    shmem.free(sig)
    shmem.free(box)


def test_signal_op(shmem, rng):
    """A signal update with no data (nvshmemx_signal_op): set, then add, to the right neighbour."""
    me, n = shmem.my_pe(), shmem.n_pes()
    sig = shmem.empty(2, np.uint64)
    sig[:] = 1 << 63                                  # poison
    values = rng.integers(1, 1 << 40, size=2)       # this PE's (set, add) values
    everyone = ref_all(shmem, values)
    shmem.barrier_all()
    right, left = (me + 1) % n, (me - 1) % n
    shmem.signal_op(sig, int(values[0]), right)                      # 'set' by default
    expect = int(everyone[left][0])
    assert shmem.signal_wait_until(sig, "eq", expect, timeout=30) == expect
    shmem.barrier_all()
    shmem.signal_op(sig, np.uint64(values[1]), right, op="add")
    expect += int(everyone[left][1])
    assert shmem.signal_wait_until(sig, "eq", expect, timeout=30) == expect
    assert sig[1] == 1 << 63                                         # only sig[0] changes
    shmem.barrier_all()
    with pytest.raises(shmem.VshmemError, match="op must be 'set' or 'add'"):
        shmem.signal_op(sig, 1, right, op="xor")
    with pytest.raises(shmem.VshmemError, match="does not fit"):
        shmem.signal_op(sig, -1, right)
    with pytest.raises(shmem.VshmemError, match="is not a PE"):
        shmem.signal_op(sig, 1, n)
    with pytest.raises(shmem.VshmemError, match="uint64"):
        shmem.signal_op(sig.view(np.int32), 1, right)
    shmem.barrier_all()
    shmem.free(sig)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "xor"])
def test_reduce(shmem, rng, op):
    n = shmem.n_pes()
    local = rng.integers(1, 5, size=37).astype(np.int64)
    src = shmem.empty(37, np.int64)
    dest = shmem.empty(37, np.int64)
    src[:] = local
    dest[:] = -99
    shmem.barrier_all()
    shmem.reduce(dest, src, op)
    everyone = ref_all(shmem, local)
    fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
          "xor": lambda a, axis: np.bitwise_xor.reduce(a, axis=axis)}[op]
    assert (dest == fn(everyone, axis=0)).all()
    shmem.barrier_all()
    shmem.free(dest)
    shmem.free(src)


def test_reduce_float_in_place(shmem, rng):
    local = rng.standard_normal(100).astype(np.float32)
    x = shmem.empty(100, np.float32)
    x[:] = local
    shmem.barrier_all()
    shmem.reduce(x, x, "max")
    everyone = ref_all(shmem, local.view(np.int32).astype(np.int64))
    expect = everyone.astype(np.int32).view(np.float32).max(axis=0)
    assert (x == expect).all()
    shmem.barrier_all()
    shmem.free(x)


def test_fcollect_alltoall_broadcast(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    local = rng.integers(0, 1 << 30, size=(n, 3))
    src = shmem.empty((n, 3), np.int64)
    src[...] = local
    everyone = ref_all(shmem, local)
    dest = shmem.empty((n, 3), np.int64)
    dest[...] = -1
    shmem.barrier_all()
    shmem.alltoall(dest, src)
    assert (dest == everyone[:, me, :]).all()
    root = n - 1
    dest[...] = -1
    shmem.barrier_all()
    shmem.broadcast(dest, src, root=root)
    assert (dest == everyone[root]).all()     # the root's dest too (OpenSHMEM 1.5)
    shmem.barrier_all()
    shmem.free(dest)
    shmem.free(src)


def test_reduce_scatter(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    local = rng.integers(-1000, 1000, size=n * 6).astype(np.int32)
    src = shmem.empty(n * 6, np.int32)
    dest = shmem.empty(6, np.int32)
    src[:] = local
    dest[:] = 12345
    shmem.barrier_all()
    shmem.reduce_scatter(dest, src, "sum")
    everyone = ref_all(shmem, local.astype(np.int64))
    assert (dest == everyone.sum(axis=0)[me * 6:(me + 1) * 6]).all()
    shmem.barrier_all()
    shmem.free(dest)
    shmem.free(src)


def test_teams(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    world = shmem.team_world()
    evens = world.split_strided(0, 2, (n + 1) // 2)
    assert (evens is not None) == (me % 2 == 0)
    if evens is not None:
        assert evens.my_pe() == me // 2 and evens.n_pes() == (n + 1) // 2
        evens.barrier()
    shmem.barrier_all()
    xr = 2 if n >= 2 else 1
    row, col = world.split_2d(xr)
    assert row.n_pes() == min(xr, n - (me // xr) * xr) and row.my_pe() == me % xr
    assert col.my_pe() == me // xr
    # A reduction over the row team only.
    local = rng.integers(1, 1000, size=8)
    src = shmem.empty(8, np.int64)
    dest = shmem.empty(8, np.int64)
    src[:] = local
    shmem.barrier_all()
    shmem.reduce(dest, src, "sum", team=row)
    everyone = ref_all(shmem, local)
    first = (me // xr) * xr
    assert (dest == everyone[first:first + row.n_pes()].sum(axis=0)).all()
    shmem.barrier_all()
    shmem.free(dest)
    shmem.free(src)
    row.barrier()
    col.sync()
    for t in (row, col, evens):
        if t is not None:
            t.destroy()
    shmem.barrier_all()
    with pytest.raises(shmem.VshmemError, match="destroyed"):
        row.n_pes()


def test_peer_view(shmem, rng):
    me, n = shmem.my_pe(), shmem.n_pes()
    x = shmem.empty(16, np.int64)
    x[:] = rng.integers(0, 1 << 50, size=16)
    shmem.barrier_all()
    everyone = ref_all(shmem, x.copy())
    for pe in range(n):
        if shmem._c.ptr(x.ctypes.data, pe) == 0:
            with pytest.raises(shmem.VshmemError, match="not mapped"):
                shmem.peer_view(x, pe)
            continue
        v = shmem.peer_view(x, pe)
        assert (v == everyone[pe]).all()
        del v
    shmem.barrier_all()
    shmem.free(x)


def test_free_refused_while_views_live(shmem):
    x = shmem.empty((4, 8), np.int64)
    for view in (lambda: x[1:], lambda: x.reshape(32)[3:9], lambda: x.T,
                 lambda: shmem.peer_view(x, shmem.my_pe()), lambda: x.view(np.uint8)):
        part = view()
        with pytest.raises(shmem.VshmemError, match="other view"):
            shmem.free(x)
        del part
    alias = x
    shmem.free(alias)
    del alias
    assert not shmem.is_symmetric(x)


def test_heap_reuse_keeps_symmetry(shmem):
    blocks = [shmem.empty(1 << k, np.uint8) for k in range(4, 16, 3)]
    for b in blocks[::2]:
        shmem.free(b)
    again = shmem.empty(1 << 20, np.uint8)
    addrs = ref_all(shmem, np.array([again.ctypes.data], dtype=np.int64))
    assert (addrs == addrs[0]).all()
    shmem.free(again)
    for b in blocks[1::2]:
        shmem.free(b)


class _DLPackHolder:
    """Hands a capsule from the extension's DLPack export to np.from_dlpack (the export the GPU
    heap's tensors use, tried here on host memory)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)    # kDLCPU


def test_dlpack_export(shmem, rng):
    x = shmem.empty((3, 4), np.int32)
    x[...] = rng.integers(-1000, 1000, size=(3, 4))
    alloc = shmem._find(x.ctypes.data, x.nbytes)
    cap = shmem._c.to_dlpack(x.ctypes.data, [3, 4], shmem._dtypes.CODE["int32"], False, 0, alloc)
    del alloc
    y = np.from_dlpack(_DLPackHolder(cap))
    del cap
    assert y.shape == (3, 4) and y.dtype == np.int32 and y.ctypes.data == x.ctypes.data
    assert (y == x).all()
    # The export holds the allocation: free is refused until the consumer lets go.
    with pytest.raises(shmem.VshmemError, match="other view"):
        shmem.free(x)
    del y
    shmem.free(x)
