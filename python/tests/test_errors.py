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


def test_reduce_fast_path_falls_back_with_the_same_checks(shmem):
    """reduce's short path (C-contiguous NumPy arrays, world team) takes only what it can check
    cheaply; everything else gets the general path's messages, and nothing is reduced."""
    x = shmem.empty(64, np.int64)
    y = shmem.empty(64, np.int64)
    x[:] = 5
    y[:] = 7
    shmem.barrier_all()
    assert shmem._host_reduce_fast(y, x, "sum") is True
    assert (y == 5 * shmem.n_pes()).all()
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
    assert shmem._host_reduce_fast(y, np.zeros(64, np.int64), "sum") is False
    assert (y == 5 * shmem.n_pes()).all()
    shmem.barrier_all()
    shmem.free(y)
    shmem.free(x)
