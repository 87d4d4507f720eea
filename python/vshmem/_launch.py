"""How vshmem.init() starts: vshmem's own bootstrap, or a unique ID handed over by a store."""

import os
import time


class FileStore:
    """A store in a shared folder, for unique-ID starts without torch: set() writes a file
    atomically, get() waits for it (up to `timeout` seconds)."""

    def __init__(self, path, timeout=60.0):
        self.path = path
        self.timeout = timeout
        os.makedirs(path, exist_ok=True)

    def _file(self, key):
        return os.path.join(self.path, key.replace("/", "_"))

    def set(self, key, value):
        tmp = self._file(key) + f".tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(bytes(value))
        os.replace(tmp, self._file(key))

    def get(self, key):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with open(self._file(key), "rb") as f:
                    return f.read()
            except FileNotFoundError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"vshmem.FileStore: no {key!r} in {self.path} after "
                                       f"{self.timeout} s (did rank 0 call vshmem.init?)")
                time.sleep(0.01)


def _by_vshmem_bootstrap():
    """vshmemrun, mpirun (Open MPI, PMIx) and srun: vshmem's own bootstrap knows the job."""
    env = os.environ
    return any(k in env for k in ("VSHMEM_BOOTSTRAP", "VSHMEM_RANK", "OMPI_COMM_WORLD_SIZE",
                                  "PMIX_RANK", "PMI_RANK", "SLURM_STEP_ID"))


def _by_torchrun():
    env = os.environ
    return "RANK" in env and "WORLD_SIZE" in env and "MASTER_ADDR" in env


def _torch_store(rank, nranks):
    """torch.distributed's default store when a process group exists, else a TCPStore at
    MASTER_ADDR:MASTER_PORT (a client of torchrun's agent store when it offers one)."""
    from datetime import timedelta

    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.distributed_c10d._get_default_store()
    use_agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    timeout = timedelta(seconds=float(os.environ.get("VSHMEM_BOOTSTRAP_TIMEOUT", "120")))
    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), nranks,
                         is_master=(rank == 0 and not use_agent), timeout=timeout)


def start(c, state, uid, rank, nranks, store):
    if uid is not None or store is not None:
        if rank is None or nranks is None:
            raise ValueError("vshmem.init: a unique-ID start needs rank and nranks")
    if uid is not None:
        c.init_uniqueid(bytes(uid), int(rank), int(nranks))
        return
    if store is None and not _by_vshmem_bootstrap() and _by_torchrun():
        rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        store = _torch_store(rank, nranks)
    if store is None:
        c.init()
        return
    # One key per start, so that a process may start, finalize and start again.
    key = f"vshmem_uniqueid_{state.inits}"
    if int(rank) == 0:
        uid = c.get_uniqueid()
        store.set(key, uid)
    else:
        uid = store.get(key)
    c.init_uniqueid(bytes(uid), int(rank), int(nranks))
