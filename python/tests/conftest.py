"""Every PE of the job runs the same tests in the same order (they are collective): the session
starts vshmem once and ends it after the last test."""
import os

import pytest


@pytest.fixture(scope="session")
def shmem():
    import sys

    import vshmem
    vshmem.init()
    torch = sys.modules.get("torch")
    if torch is not None and vshmem._state.heap_gpu:
        # torch's own tensors on the GPU of this PE's heap.
        torch.cuda.set_device(vshmem._state.heap_device)
    yield vshmem
    try:
        vshmem.finalize()
    except vshmem.VshmemError:
        # A failed test's traceback still holds its arrays: end anyway, so that pytest reports
        # the failure (finalize's refusal has a test of its own).
        vshmem._finalize_now()
        raise


@pytest.fixture()
def rng(shmem):
    import numpy as np
    # Fresh data on every run, different on every PE.
    seed = int.from_bytes(os.urandom(4), "little") + shmem.my_pe()
    return np.random.default_rng(seed)
