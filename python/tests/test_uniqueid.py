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
        vshmem.free(mine)
        vshmem.free(x)
        vshmem.finalize()
    assert not vshmem.is_initialized()
