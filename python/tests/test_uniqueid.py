"""The unique-ID start through a store (here a FileStore; torch.distributed's under torchrun), two
starts in one process. Run under vshmemrun only for the rank and size (VSHMEM_RANK/VSHMEM_NPES)."""
import os
import tempfile

import numpy as np

import vshmem


def test_store_start_twice():
    rank, nranks = int(os.environ["VSHMEM_RANK"]), int(os.environ["VSHMEM_NPES"])
    folder = os.path.join(tempfile.gettempdir(), "vshmem-py-" + os.environ["VSHMEM_JOB_ID"])
    store = vshmem.FileStore(folder, timeout=30)
    for start in range(2):
        vshmem.init(store=store, rank=rank, nranks=nranks)
        assert (vshmem.my_pe(), vshmem.n_pes()) == (rank, nranks)
        x = vshmem.empty(64, np.int64)
        data = np.random.default_rng().integers(0, 1 << 60, size=64)
        x[:] = -1
        vshmem.barrier_all()
        vshmem.put(x, data, (rank + 1) % nranks)
        vshmem.barrier_all()
        # What our left neighbour sent, checked through a get of its own data.
        mine = vshmem.empty(64, np.int64)
        mine[:] = data
        vshmem.barrier_all()
        left = np.empty(64, np.int64)
        vshmem.get(left, mine, (rank - 1) % nranks)
        assert (x == left).all()
        vshmem.barrier_all()
        # Each start configures the native short path again: a reduce takes it.
        total = vshmem.empty(64, np.int64)
        assert vshmem._fast_reduce(total, mine, "sum", None, False) is True
        everyone = vshmem.empty(64 * nranks, np.int64)
        vshmem.fcollect(everyone, mine)
        assert (total == everyone.reshape(nranks, 64).sum(0)).all()
        vshmem.barrier_all()
        for a in (everyone, total, mine, x):
            vshmem.free(a)
        del a
        # An allocation left to finalize: the short path's table must forget it too.
        left_over = vshmem.empty(8, np.int64)
        assert left_over.ctypes.data in dict(vshmem._c.fast_allocations())
        del left_over
        vshmem.finalize()
        assert vshmem._c.fast_allocations() == []
        assert vshmem._fast_reduce(np.zeros(8), np.zeros(8), "sum", None, False) is False
    assert not vshmem.is_initialized()
