"""The GPU heap with torch (VSHMEM_BACKEND=cuda): tensors at one address on every PE, RMA, and
on-stream collectives checked against torch's own arithmetic. Skipped without torch or a GPU."""
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no GPU", allow_module_level=True)


def everyone(shmem, local):
    """Every PE's copy of `local` (a CUDA tensor), through fcollect on torch's stream."""
    src = shmem.empty(local.shape, local.dtype, device="cuda")
    src.copy_(local)
    out = shmem.empty((shmem.n_pes(),) + tuple(local.shape), local.dtype, device="cuda")
    shmem.barrier_all(stream=torch.cuda.current_stream())
    shmem.fcollect(out, src)
    result = out.clone()
    free_all(shmem, out, src)
    return result


def free_all(shmem, *tensors):
    torch.cuda.synchronize()
    shmem.barrier_all()
    for t in tensors:
        shmem.free(t)


def test_tensor_on_gpu_heap(shmem):
    x = shmem.empty((4, 8), torch.bfloat16, device="cuda")
    assert isinstance(x, torch.Tensor) and x.is_cuda and x.dtype == torch.bfloat16
    addr = torch.tensor([x.data_ptr()], dtype=torch.int64, device="cuda")
    addrs = everyone(shmem, addr)
    assert (addrs == addrs[0]).all()
    free_all(shmem, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_all_reduce_matches_torch(shmem, dtype, op):
    torch.manual_seed(1000 + shmem.my_pe())
    n = 1 << 16
    if dtype.is_floating_point:
        local = torch.randn(n, device="cuda").to(dtype)
    else:
        local = torch.randint(-1000, 1000, (n,), device="cuda", dtype=dtype)
    src = shmem.empty(n, dtype, device="cuda")
    dest = shmem.empty(n, dtype, device="cuda")
    src.copy_(local)
    dest.fill_(7)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    shmem.barrier_all(stream=stream)
    shmem.reduce(dest, src, op, stream=stream)
    stream.synchronize()
    all_ = everyone(shmem, local)
    if op == "sum":
        # vshmem combines 16-bit floats in float32 in team order and rounds once.
        expect = all_.float().sum(0) if dtype in (torch.bfloat16, torch.float16) else all_.sum(0)
        expect = expect.to(dtype)
    else:
        expect = getattr(all_, "amax" if op == "max" else "amin")(0)
    if dtype.is_floating_point and op == "sum":
        torch.testing.assert_close(dest.float(), expect.float(), rtol=1e-2 if dtype != torch.float32 else 1e-5, atol=1e-2)
    else:
        assert torch.equal(dest, expect)
    del all_, local
    free_all(shmem, dest, src)


def test_stream_forms(shmem):
    """int handle, torch.cuda.Stream, and an object with __cuda_stream__."""
    s = torch.cuda.Stream()

    class Proto:
        def __cuda_stream__(self):
            return (0, s.cuda_stream)

    x = shmem.empty(1024, torch.float32, device="cuda")
    for form in (s.cuda_stream, s, Proto()):
        x.fill_(shmem.my_pe() + 1)
        torch.cuda.synchronize()
        shmem.barrier_all()
        shmem.reduce(x, x, "sum", stream=form)
        s.synchronize()
        n = shmem.n_pes()
        assert (x == n * (n + 1) / 2).all()
        shmem.barrier_all()   # every PE's reduce has read x before the next fill
    free_all(shmem, x)


def test_fcollect_alltoall_broadcast_reduce_scatter(shmem):
    me, n = shmem.my_pe(), shmem.n_pes()
    torch.manual_seed(77 + me)
    local = torch.randn(n, 256, device="cuda")
    all_ = everyone(shmem, local)
    src = shmem.empty((n, 256), torch.float32, device="cuda")
    dest = shmem.empty((n, 256), torch.float32, device="cuda")
    src.copy_(local)
    dest.fill_(float("nan"))
    shmem.barrier_all(stream=torch.cuda.current_stream())
    shmem.alltoall(dest, src)
    torch.cuda.synchronize()
    assert torch.equal(dest, all_[:, me, :])
    shmem.barrier_all()       # checked everywhere before the broadcast overwrites dest
    shmem.broadcast(dest, src, root=n - 1)
    torch.cuda.synchronize()
    assert torch.equal(dest, all_[n - 1])
    rs = shmem.empty(256, torch.float32, device="cuda")
    shmem.reduce_scatter(rs, src, "sum")
    torch.cuda.synchronize()
    torch.testing.assert_close(rs, all_.sum(0)[me], rtol=1e-5, atol=1e-5)
    del all_
    free_all(shmem, rs, dest, src)


def test_put_get_signal_and_peer_view(shmem):
    me, n = shmem.my_pe(), shmem.n_pes()
    data = torch.arange(4096, device="cuda", dtype=torch.int64) * (me + 3)
    box = shmem.empty(4096, torch.int64, device="cuda")
    sig = shmem.empty(1, torch.int64, device="cuda")
    box.fill_(-1)
    sig.zero_()
    torch.cuda.synchronize()
    shmem.barrier_all()
    shmem.put_signal(box, data, sig, 1, (me + 1) % n)
    shmem.signal_wait_until(sig, "eq", 1, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    left = (me - 1) % n
    assert torch.equal(box, torch.arange(4096, device="cuda", dtype=torch.int64) * (left + 3))
    back = torch.empty_like(data)
    shmem.get(back, box, (me + 1) % n)
    torch.cuda.synchronize()
    assert torch.equal(back, data)
    view = shmem.peer_view(box, (me + 1) % n)
    assert torch.equal(view, data)
    with pytest.raises(shmem.VshmemError, match="other view"):
        shmem.free(box)
    del view
    if shmem._storage_uses(box) is not None:
        part = box[10:]
        with pytest.raises(shmem.VshmemError, match="other view"):
            shmem.free(box)
        del part
    free_all(shmem, sig, box)


def test_signal_op_on_stream(shmem):
    """signal_op with no data: set, then add, to the right neighbour, waited for on a stream."""
    me, n = shmem.my_pe(), shmem.n_pes()
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    mine = torch.randint(1, 1 << 40, (2,), generator=g, dtype=torch.int64).cuda()
    values = everyone(shmem, mine).cpu()
    sig = shmem.empty(2, torch.int64, device="cuda")
    sig.fill_(-5)                                     # poison
    torch.cuda.synchronize()
    shmem.barrier_all()
    left, right = (me - 1) % n, (me + 1) % n
    stream = torch.cuda.Stream()
    shmem.signal_op(sig, int(mine[0]), right, stream=stream)
    expect = int(values[left][0])
    shmem.signal_wait_until(sig, "eq", expect, stream=stream)
    stream.synchronize()
    assert int(sig[0]) == expect and int(sig[1]) == -5
    shmem.barrier_all()
    shmem.signal_op(sig, int(mine[1]), right, op="add")          # torch's current stream
    expect += int(values[left][1])
    shmem.signal_wait_until(sig, "eq", expect, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert int(sig[0]) == expect
    free_all(shmem, sig)


def test_gpu_errors(shmem):
    with pytest.raises(shmem.VshmemError, match="heap is GPU memory"):
        shmem.empty(4, "float32", device="cpu")
    x = shmem.empty(16, torch.int8, device="cuda")
    with pytest.raises(shmem.VshmemError, match="no sum reduction of int8 on the GPU"):
        shmem.reduce(x, x, "sum")
    local = torch.zeros(16, device="cuda", dtype=torch.int8)
    with pytest.raises(shmem.VshmemError, match="not symmetric"):
        shmem.put(local, x, 0)
    free_all(shmem, x)


def test_reduce_fast_path_and_its_fallbacks(shmem):
    """The common case (contiguous tensors, world team) takes the short path; everything else
    still gets the general path's checks and messages."""
    me, n = shmem.my_pe(), shmem.n_pes()
    torch.manual_seed(4242 + me)
    local = torch.randn(2048, device="cuda")
    x = shmem.empty(2048, torch.float32, device="cuda")
    y = shmem.empty(2048, torch.float32, device="cuda")
    x.copy_(local)
    y.fill_(float("nan"))
    all_ = everyone(shmem, local)
    torch.cuda.synchronize()
    shmem.barrier_all()
    assert shmem._fast_reduce(y, x, "sum", None, False) is True
    torch.cuda.synchronize()
    torch.testing.assert_close(y, all_.sum(0), rtol=1e-5, atol=1e-5)
    shmem.barrier_all()
    y.fill_(float("nan"))
    torch.cuda.synchronize()
    shmem.barrier_all()
    shmem.reduce(y[1024:], x[:1024], "max")          # views inside the allocations
    torch.cuda.synchronize()
    assert torch.equal(y[1024:], all_[:, :1024].amax(0))
    assert torch.isnan(y[:1024]).all()
    shmem.barrier_all()
    with pytest.raises(ValueError, match="contiguous"):
        shmem.reduce(y.view(32, 64).t(), x.view(32, 64).t(), "sum")
    with pytest.raises(shmem.VshmemError, match="overlap"):
        shmem.reduce(x[1:], x[:-1], "sum")
    with pytest.raises(shmem.VshmemError, match="not symmetric"):
        shmem.reduce(y, local, "sum")
    with pytest.raises(shmem.VshmemError, match="op must be one of"):
        shmem.reduce(y, x, "bogus")
    with pytest.raises(shmem.VshmemError, match="source must hold"):
        shmem.reduce_scatter(y[:16], x[:16 * n + 1], "sum")
    assert shmem._fast_reduce(y, local, "sum", None, False) is False
    del all_, local
    free_all(shmem, y, x)
