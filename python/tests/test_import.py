"""One process without a launcher: what works before init, and what is refused."""
import numpy as np
import pytest

import vshmem


def test_before_init():
    assert not vshmem.is_initialized()
    assert vshmem.my_pe() == -1
    with pytest.raises(vshmem.VshmemError, match="not initialized"):
        vshmem.empty(4, np.int64)
    with pytest.raises(vshmem.VshmemError, match="not initialized"):
        vshmem.barrier_all()
    with pytest.raises(ValueError, match="rank and nranks"):
        vshmem.init(uid=b"x" * 128)
    with pytest.raises(vshmem.VshmemError, match="128 bytes"):
        vshmem.init(uid=b"short", rank=0, nranks=1)


def test_bad_uniqueid_is_an_exception():
    with pytest.raises(vshmem.VshmemError, match="vshmem: "):
        vshmem.init(uid=bytes(128), rank=0, nranks=1)
    assert not vshmem.is_initialized()


def test_job_of_one_and_restart():
    for _ in range(2):
        vshmem.init()
        assert (vshmem.my_pe(), vshmem.n_pes()) == (0, 1)
        x = vshmem.empty((2, 3), np.float32)
        x[...] = 1.5
        vshmem.reduce(x, x, "sum")
        assert (x == 1.5).all()
        vshmem.free(x)
        vshmem.finalize()
        assert not vshmem.is_initialized()
