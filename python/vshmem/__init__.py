"""vshmem from Python: symmetric NumPy arrays (host heap) and PyTorch tensors (GPU heap).

    import vshmem, numpy as np
    vshmem.init()                       # vshmemrun, mpirun, torchrun, or a job of one PE
    x = vshmem.empty(4, np.int64)       # same address on every PE (collective)
    x[:] = vshmem.my_pe()
    vshmem.barrier_all()
    y = vshmem.empty(4, np.int64)
    vshmem.get(y, x, (vshmem.my_pe() + 1) % vshmem.n_pes())
    vshmem.free(y); vshmem.free(x)
    vshmem.finalize()

Every call checks its arguments and raises VshmemError (or TypeError / ValueError) with a message
naming the PE, the call and the cause; vshmem's C calls end the job on bad input, these do not.
Only global_exit ends the job.
"""

import atexit
import bisect
import ctypes
import operator
import os
import sys

# A pip-installed package carries the bootstrap plugins (MPI, PMIx) next to itself.
_plugins = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
if os.path.isdir(_plugins):
    os.environ["VSHMEM_PLUGIN_PATH"] = os.pathsep.join(
        p for p in (os.environ.get("VSHMEM_PLUGIN_PATH"), _plugins) if p)

from . import _vshmem as _c  # noqa: E402
from . import _dtypes
from ._launch import FileStore, start as _start

VshmemError = _c.VshmemError
HAVE_CUDA = _c.HAVE_CUDA

__all__ = [
    "VshmemError", "FileStore", "Team", "init", "finalize", "is_initialized", "my_pe", "n_pes",
    "get_uniqueid", "global_exit", "empty", "zeros", "free", "peer_view", "is_symmetric", "put",
    "get", "put_nbi", "get_nbi", "put_signal", "signal_op", "signal_fetch", "signal_wait_until",
    "quiet", "fence", "barrier", "barrier_all", "sync_all", "reduce", "all_reduce", "fcollect",
    "all_gather", "alltoall", "broadcast", "reduce_scatter", "team_world", "team_shared",
    "team_node", "HAVE_CUDA", "stream_synchronize",
]


class _State:
    def __init__(self):
        self.scratch = 0          # 16 int64: the agreement reductions' source and dest
        self.heap_gpu = False
        self.heap_device = -1
        self.allocs = {}          # start address -> _Allocation
        self.starts = []          # sorted start addresses
        self.inits = 0
        self.npes = 0
        self.fast_torch = False   # the short path knows torch's dtypes and current stream


_state = _State()


def _err(call, cause):
    return VshmemError(f"vshmem: PE {_c.my_pe()}: {call}: {cause}")


def _require_init(call):
    if _c.my_pe() < 0:
        raise _err(call, "vshmem is not initialized (call vshmem.init() first)")


# --- start and end ----------------------------------------------------------------------------

def init(uid=None, rank=None, nranks=None, store=None):
    """Starts this PE (collective over the job). Without arguments the launcher decides:
    vshmemrun and mpirun/srun use vshmem's own bootstrap; under torchrun (RANK, WORLD_SIZE and
    MASTER_ADDR set) rank 0 makes a unique ID and publishes it through torch.distributed's store
    (the default group's when one is initialized, else a TCPStore at MASTER_ADDR:MASTER_PORT);
    alone, the program is a job of one PE.

    uid, rank, nranks: start from a unique ID (get_uniqueid() in rank 0) handed over by the
    application. store, rank, nranks: rank 0 publishes a new ID in `store` (anything with
    set(key, bytes) and a blocking get(key), as torch.distributed.Store, or vshmem.FileStore).
    Calling init again while initialized does nothing."""
    if _c.my_pe() >= 0:
        return
    _start(_c, _state, uid, rank, nranks, store)
    _state.inits += 1
    _state.scratch = _c.malloc(16 * 8, 64)
    _state.heap_gpu, _state.heap_device = _c.device_of(_state.scratch)
    _state.npes = _c.n_pes()
    _fast_setup()


def is_initialized():
    return _c.my_pe() >= 0


def finalize():
    """Ends this PE's part of the job (collective). Refused on every PE while any PE still holds
    arrays or tensors viewing symmetric memory that was not freed: they would point at unmapped
    memory afterwards."""
    if _c.my_pe() < 0:
        return
    held = [addr for addr in list(_state.allocs) if _views_at(addr) > 0]
    worst = _agree([len(held), _c.my_pe() if held else -1])
    if worst[0] > 0:
        raise _err("vshmem.finalize", f"PE {worst[1]} still holds views of {worst[0]} symmetric "
                   "allocation(s); vshmem.free() them (or drop every view) first")
    _finalize_now()


def _finalize_now():
    for a in _state.allocs.values():
        a.root = None
    _state.allocs.clear()
    _state.starts.clear()
    _state.scratch = 0
    _state.fast_torch = False
    _c.fast_reset()
    _c.finalize()


@atexit.register
def _finalize_at_exit():
    if _c.my_pe() >= 0:
        _finalize_now()


def my_pe():
    return _c.my_pe()


def n_pes():
    return _c.n_pes()


def get_uniqueid():
    """A new unique ID (bytes) for init(uid=..., rank=0, ...). This process must be rank 0."""
    return _c.get_uniqueid()


def global_exit(status=1):
    """Ends the whole job with `status` (shmem_global_exit): the one call that does not return."""
    _c.global_exit(int(status))


# --- agreement among PEs ----------------------------------------------------------------------

def _agree(values):
    """The element-wise maximum over all PEs of up to 8 int64 values (collective)."""
    n = len(values)
    src = (ctypes.c_int64 * n)(*[int(v) for v in values])
    out = (ctypes.c_int64 * n)()
    me = _c.my_pe()
    _c.putmem(_state.scratch, ctypes.addressof(src), 8 * n, me)
    _c.reduce(_c.TEAM_WORLD, _dtypes.OPS["max"], _dtypes.CODE["int64"], _state.scratch + 64,
              _state.scratch, n)
    _c.getmem(ctypes.addressof(out), _state.scratch + 64, 8 * n, me)
    return list(out)


# --- symmetric memory -------------------------------------------------------------------------

class _Allocation:
    """One symmetric allocation. Every tensor export and peer view holds a reference to it; on the
    host heap, `root` is a byte array over it (its base is the allocation) that every NumPy array
    vshmem returns, and every slice or reshape of one, has as its base (NumPy collapses chains of
    views to the first array whose base is not an array)."""
    __slots__ = ("addr", "nbytes", "freed", "root", "storage_uses", "__weakref__")

    def __init__(self, addr, nbytes):
        self.addr = addr
        self.nbytes = nbytes
        self.freed = False
        self.root = None
        self.storage_uses = None   # a new tensor's storage use count (torch), for free()

    def __repr__(self):
        return f"<vshmem allocation {self.addr:#x} +{self.nbytes}>"


def _find(addr, nbytes, _bisect_right=bisect.bisect_right):
    # Called twice by every collective: its lookups are bound once (default argument, locals).
    starts = _state.starts
    i = _bisect_right(starts, addr) - 1
    if i < 0:
        return None
    a = _state.allocs[starts[i]]
    return a if addr + nbytes <= a.addr + a.nbytes else None


def _views_at(addr, locals_held=0):
    """How many arrays, tensors and peer views of the allocation at addr are alive."""
    alloc = _state.allocs[addr]
    # Not views: the registry, `alloc` here, getrefcount's argument, the root's base, and the
    # caller's own local references.
    n = sys.getrefcount(alloc) - 3 - locals_held - (alloc.root is not None)
    if alloc.root is not None:
        # Not views: alloc.root and getrefcount's argument.
        n += sys.getrefcount(alloc.root) - 2
    return n


def _parse_device(device):
    d = str(device)
    if d == "cpu":
        return False
    if d == "cuda" or d.startswith("cuda:"):
        return True
    raise ValueError(f"vshmem.empty: device must be 'cpu' or 'cuda', not {device!r}")


def _view(alloc, addr, shape, name, torch_dtype):
    """An array (host heap, NumPy dtype), or a tensor / DLPack capsule over addr."""
    if not _state.heap_gpu and torch_dtype is None:
        import numpy as np
        if addr != alloc.addr:          # a peer's copy: holds the allocation itself
            return _c.numpy_view(addr, list(shape), np.dtype(name), alloc)
        if alloc.root is None:
            alloc.root = _c.numpy_view(addr, [alloc.nbytes], np.dtype(np.uint8), alloc)
        count = 1
        for d in shape:
            count *= d
        return alloc.root[:count * _dtypes.SIZE[name]].view(np.dtype(name)).reshape(shape)
    cap = _c.to_dlpack(addr, list(shape), _dtypes.CODE[name], _state.heap_gpu,
                       _state.heap_device, alloc)
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return cap
    return torch.utils.dlpack.from_dlpack(cap)


def _storage_uses(t):
    """How many tensors share t's storage (torch keeps no Python-visible count of views of one
    DLPack import); None where torch does not tell."""
    torch = sys.modules.get("torch")
    count = getattr(getattr(torch, "_C", None), "_storage_Use_Count", None)
    if count is None:
        return None
    try:
        return count(t.untyped_storage()._cdata)
    except Exception:
        return None


def empty(shape, dtype="float32", device=None):
    """A new symmetric array (collective: every PE passes the same shape and dtype, and gets
    memory at the same address). device 'cpu' (the host heap, VSHMEM_BACKEND=host): a NumPy array,
    or a CPU torch.Tensor for a torch dtype; device 'cuda' (the GPU heap): a torch.Tensor when torch
    is installed, else a DLPack capsule. Default: where the heap is. Free with vshmem.free()."""
    _require_init("vshmem.empty")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"vshmem.empty: negative dimension in {shape}")
    name = _dtypes.name_of(dtype)
    if name not in _dtypes.SIZE:
        raise TypeError(f"vshmem.empty: dtype {dtype} is not supported")
    torch_dtype = dtype if type(dtype).__module__.startswith("torch") else None
    want_gpu = _state.heap_gpu if device is None else _parse_device(device)
    if want_gpu != _state.heap_gpu:
        where = "GPU memory" if _state.heap_gpu else "host memory"
        raise _err("vshmem.empty", f"device={device!r}, but this job's symmetric heap is {where} "
                   "(VSHMEM_BACKEND=host for NumPy arrays on the host heap, cuda for tensors)")
    if name == "bfloat16" and not _state.heap_gpu and torch_dtype is None:
        raise TypeError("vshmem.empty: NumPy has no bfloat16; pass torch.bfloat16")
    count = 1
    for s in shape:
        count *= s
    nbytes = count * _dtypes.SIZE[name]
    got = _agree([nbytes, -nbytes])
    if got[0] != -got[1]:
        raise _err("vshmem.empty", f"PEs disagree on the size: from {-got[1]} to {got[0]} bytes "
                   f"(this PE asked {nbytes}); every PE must pass the same shape and dtype")
    addr = _c.malloc(max(nbytes, 1), 64)
    alloc = _Allocation(addr, max(nbytes, 1))
    _state.allocs[addr] = alloc
    bisect.insort(_state.starts, addr)
    _c.fast_add_allocation(addr, alloc.nbytes)
    x = _view(alloc, addr, shape, name, torch_dtype)
    if _state.heap_gpu and not _state.fast_torch:
        _fast_setup()                  # torch was imported after init
    if hasattr(x, "data_ptr"):
        # Measured now, while x is the storage's only tensor: free() compares against it.
        alloc.storage_uses = _storage_uses(x)
    return x


def zeros(shape, dtype="float32", device=None):
    """As empty(), filled with zeros on every PE (returns after a barrier)."""
    x = empty(shape, dtype, device)
    if hasattr(x, "zero_"):
        x.zero_()
        if x.is_cuda:
            # Peers may read it once the barrier is passed: the fill must be done by then.
            stream_synchronize(None)
    else:
        x[...] = 0
    barrier_all()
    return x


def _buffer(x, call, what):
    """(address, bytes, dtype name, on GPU) of a contiguous array or tensor."""
    if hasattr(x, "data_ptr"):                                   # torch.Tensor
        if not x.is_contiguous():
            raise ValueError(f"{call}: {what} must be contiguous")
        return x.data_ptr(), x.nbytes, _dtypes.name_of(x.dtype), x.is_cuda
    info = _c.array_info(x)                                      # NumPy
    if info is None:
        ai = getattr(x, "__array_interface__", None)             # NumPy-like
        if ai is not None:
            info = (ai["data"][0], x.nbytes, x.flags.c_contiguous)
    if info is not None:
        if not info[2]:
            raise ValueError(f"{call}: {what} must be C-contiguous")
        return info[0], info[1], _dtypes.name_of(x.dtype), False
    raise TypeError(f"{call}: {what} must be a NumPy array or a torch.Tensor, not "
                    f"{type(x).__name__}")


def _symmetric(call, x, what):
    addr, nbytes, name, gpu = _buffer(x, call, what)
    alloc = _find(addr, nbytes)
    if alloc is None:
        raise _err(call, f"{what} ({nbytes} bytes at {addr:#x}) is not symmetric memory: make it "
                   "with vshmem.empty()")
    return alloc, addr, nbytes, name, gpu


def is_symmetric(x):
    """True when x lies inside a live allocation of vshmem.empty()."""
    addr, nbytes, _, _ = _buffer(x, "vshmem.is_symmetric", "x")
    return _find(addr, nbytes) is not None


def free(x):
    """Frees the symmetric allocation x views (collective, in the same order on every PE). Refused
    on every PE (nothing is freed) while any PE holds another view of it: drop those first."""
    _require_init("vshmem.free")
    alloc, addr, _, _, _ = _symmetric("vshmem.free", x, "x")
    if addr != alloc.addr:
        raise _err("vshmem.free", "x is a part of an allocation: pass the array vshmem.empty() "
                   "returned")
    # Not counted: this frame's `alloc`, and x itself.
    mine = _views_at(alloc.addr, 1) - _own_references(x, alloc)
    if hasattr(x, "data_ptr") and alloc.storage_uses is not None:
        now = _storage_uses(x)
        if now is not None:
            mine += max(0, now - alloc.storage_uses)   # slices and views of the tensor
    worst = _agree([mine, _c.my_pe() if mine > 0 else -1])
    if worst[0] > 0:
        raise _err("vshmem.free", f"PE {worst[1]} still holds {worst[0]} other view(s) of this "
                   "allocation (slices, reshapes, peer views, exported tensors); drop them first")
    del _state.allocs[alloc.addr]
    _state.starts.remove(alloc.addr)
    _c.fast_remove_allocation(alloc.addr)
    alloc.freed = True
    alloc.root = None
    _c.free(alloc.addr)


def _own_references(x, alloc):
    # x itself: a NumPy array (its base is the root), or a tensor's storage (one DLPack export).
    base = getattr(x, "base", None)
    return 1 if (base is not None and base is alloc.root) or hasattr(x, "data_ptr") else 0


def peer_view(x, pe):
    """A zero-copy view of PE pe's copy of the symmetric array x (loads and stores reach the peer's
    memory directly). Raises VshmemError where pe's memory is not mapped here (another node, no P2P:
    use get/put)."""
    _require_init("vshmem.peer_view")
    _, addr, nbytes, name, _ = _symmetric("vshmem.peer_view", x, "x")
    pe = _check_pe("vshmem.peer_view", pe)
    p = _c.ptr(addr, pe)
    if p == 0:
        raise _err("vshmem.peer_view", f"PE {pe}'s memory is not mapped into this PE (another node, "
                   "or no peer access between the GPUs): use vshmem.get/put")
    alloc = _find(addr, nbytes)
    shape = tuple(x.shape)
    torch_dtype = x.dtype if hasattr(x, "data_ptr") else None
    return _view(alloc, p, shape, name, torch_dtype)


# --- teams ------------------------------------------------------------------------------------

class Team:
    """A team of PEs (OpenSHMEM teams). Predefined: team_world(), team_shared(), team_node()."""

    def __init__(self, handle, name=None):
        self._h = handle
        self._name = name

    def _handle(self, call):
        if self._h is None:
            raise _err(call, "the team was destroyed")
        _require_init(call)
        return self._h

    def my_pe(self):
        return _c.team_my_pe(self._handle("Team.my_pe"))

    def n_pes(self):
        return _c.team_n_pes(self._handle("Team.n_pes"))

    def translate_pe(self, pe, dest_team):
        return _c.team_translate_pe(self._handle("Team.translate_pe"), int(pe),
                                    dest_team._handle("Team.translate_pe"))

    def split_strided(self, start, stride, size):
        """Collective over this team: the members start, start+stride, ... (size of them); None on
        the PEs outside the new team."""
        h = _c.team_split_strided(self._handle("Team.split_strided"), int(start), int(stride),
                                  int(size))
        return None if h == _c.TEAM_INVALID else Team(h)

    def split_2d(self, xrange):
        """Collective over this team: (row team, column team) for rows of xrange members."""
        x, y = _c.team_split_2d(self._handle("Team.split_2d"), int(xrange))
        return (None if x == _c.TEAM_INVALID else Team(x),
                None if y == _c.TEAM_INVALID else Team(y))

    def sync(self):
        _c.team_sync(self._handle("Team.sync"))

    def barrier(self, stream=None):
        """quiet, then synchronize the team; on `stream` when given (GPU heap)."""
        h = self._handle("Team.barrier")
        if stream is not None:
            _c.team_barrier_on_stream(h, _stream_handle(stream))
        else:
            _c.quiet()
            _c.team_sync(h)

    def destroy(self):
        """Collective over the team. Predefined teams cannot be destroyed."""
        if self._name is not None:
            raise _err("Team.destroy", f"{self._name} is predefined and cannot be destroyed")
        h = self._handle("Team.destroy")
        self._h = None
        _c.team_destroy(h)

    def __repr__(self):
        if self._h is None:
            return "<vshmem.Team destroyed>"
        return f"<vshmem.Team {self._name or hex(self._h)}>"


_WORLD = Team(_c.TEAM_WORLD, "TEAM_WORLD")
_SHARED = Team(_c.TEAM_SHARED, "TEAM_SHARED")
_NODE = Team(_c.TEAM_NODE, "TEAM_NODE")


def team_world():
    return _WORLD


def team_shared():
    return _SHARED


def team_node():
    return _NODE


# --- streams ----------------------------------------------------------------------------------

def _stream_handle(stream):
    """cudaStream_t as an int from an int, a torch.cuda.Stream, or an object with
    __cuda_stream__ (the CUDA stream protocol: a method returning (version, handle))."""
    if stream is None:
        return _current_stream()
    if isinstance(stream, int):
        return stream
    # torch.cuda.Stream: its C property (its __cuda_stream__ says the same, at a Python call's
    # cost).
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return int(handle)
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        v = proto() if callable(proto) else proto
        return int(v[1]) if isinstance(v, tuple) else int(v)
    raise TypeError(f"stream must be an int, a torch.cuda.Stream or have __cuda_stream__, not "
                    f"{type(stream).__name__}")


def stream_synchronize(stream=None):
    _c.stream_synchronize(_stream_handle(stream))


# --- RMA and signals --------------------------------------------------------------------------

def _index(value):
    """value as an int when it is an integer (int, NumPy integer), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _check_pe(call, pe, team=None):
    n = _c.n_pes() if team is None else team.n_pes()
    p = _index(pe)
    if p is None or p < 0 or p >= n:
        raise _err(call, f"PE {pe!r} is not a PE of the job (0..{n - 1})")
    return p


def _pair(call, dest, source, sym_dest):
    d = _buffer(dest, call, "dest")
    s = _buffer(source, call, "source")
    if d[1] != s[1]:
        raise _err(call, f"dest has {d[1]} bytes, source {s[1]}: sizes must match")
    if d[2] != s[2]:
        raise _err(call, f"dest is {d[2]}, source {s[2]}: dtypes must match")
    if (d[3] or s[3]) and not _state.heap_gpu:
        raise _err(call, "a GPU tensor cannot take part: this job's symmetric heap is host memory")
    sym = d if sym_dest else s
    if _find(sym[0], sym[1]) is None:
        which = "dest" if sym_dest else "source"
        raise _err(call, f"{which} ({sym[1]} bytes at {sym[0]:#x}) is not symmetric memory: make "
                   "it with vshmem.empty()")
    return d, s


def _rma(call, dest, source, pe, put, nbi, stream):
    _require_init(call)
    pe = _check_pe(call, pe)
    d, s = _pair(call, dest, source, put)
    if d[1] == 0:
        return
    on_gpu = _state.heap_gpu and (d[3] or s[3] or stream is not None)
    if on_gpu and _c.ptr(d[0] if put else s[0], pe) != 0:
        st = _stream_handle(stream)
        (_c.putmem_on_stream if put else _c.getmem_on_stream)(d[0], s[0], d[1], pe, st)
        return
    if on_gpu:
        # Not mapped (another node): the host path, after the stream's earlier work.
        _c.stream_synchronize(_stream_handle(stream))
    if put:
        (_c.putmem_nbi if nbi else _c.putmem)(d[0], s[0], d[1], pe)
    else:
        (_c.getmem_nbi if nbi else _c.getmem)(d[0], s[0], d[1], pe)


def put(dest, source, pe, stream=None):
    """Copies source (local) into PE pe's dest (symmetric); sizes and dtypes must match. Host
    heap: complete when it returns. GPU heap: enqueued on `stream` (default: torch's current)."""
    _rma("vshmem.put", dest, source, pe, True, False, stream)


def get(dest, source, pe, stream=None):
    """Copies PE pe's source (symmetric) into dest (local)."""
    _rma("vshmem.get", dest, source, pe, False, False, stream)


def put_nbi(dest, source, pe, stream=None):
    """put that may complete later: quiet() (or the stream) completes it."""
    _rma("vshmem.put_nbi", dest, source, pe, True, True, stream)


def get_nbi(dest, source, pe, stream=None):
    _rma("vshmem.get_nbi", dest, source, pe, False, True, stream)


_SIG_OPS = {"set": _c.SIGNAL_SET, "add": _c.SIGNAL_ADD}
_CMPS = {"eq": _c.CMP_EQ, "ne": _c.CMP_NE, "gt": _c.CMP_GT, "ge": _c.CMP_GE, "lt": _c.CMP_LT,
         "le": _c.CMP_LE}


def _signal(call, sig):
    _, addr, nbytes, name, gpu = _symmetric(call, sig, "sig")
    if name not in ("uint64", "int64") or nbytes < 8:
        raise _err(call, f"sig must be a symmetric uint64 (or int64) array, not {name} of "
                   f"{nbytes} bytes")
    if addr % 8:
        raise _err(call, "sig is not 8-byte aligned")
    return addr


def put_signal(dest, source, sig, value, pe, op="set", stream=None, nbi=False):
    """put, then update PE pe's signal word sig[0] (op 'set' or 'add' value) once the data has
    arrived there."""
    call = "vshmem.put_signal"
    _require_init(call)
    pe = _check_pe(call, pe)
    d, s = _pair(call, dest, source, True)
    sa = _signal(call, sig)
    if op not in _SIG_OPS:
        raise _err(call, f"op must be 'set' or 'add', not {op!r}")
    value = int(value)
    if value < 0 or value >= 1 << 64:
        raise _err(call, f"value {value} does not fit in 64 unsigned bits")
    if _state.heap_gpu and _c.ptr(d[0], pe) != 0 and (d[3] or s[3] or stream is not None):
        _c.putmem_signal_on_stream(d[0], s[0], d[1], sa, value, _SIG_OPS[op], pe,
                                   _stream_handle(stream))
        return
    if _state.heap_gpu:
        _c.stream_synchronize(_stream_handle(stream))
    _c.putmem_signal(d[0], s[0], d[1], sa, value, _SIG_OPS[op], pe, bool(nbi))


def signal_op(sig, value, pe, op="set", stream=None):
    """Updates PE pe's signal word sig[0] (op 'set' or 'add' value) with no data to go before it
    (nvshmemx_signal_op). GPU heap: on `stream` (default torch's current) where pe is mapped."""
    call = "vshmem.signal_op"
    _require_init(call)
    pe = _check_pe(call, pe)
    sa = _signal(call, sig)
    if op not in _SIG_OPS:
        raise _err(call, f"op must be 'set' or 'add', not {op!r}")
    value = int(value)
    if value < 0 or value >= 1 << 64:
        raise _err(call, f"value {value} does not fit in 64 unsigned bits")
    if _state.heap_gpu:
        if _c.ptr(sa, pe) != 0:
            _c.signal_op_on_stream(sa, value, _SIG_OPS[op], pe, _stream_handle(stream))
            return
        # Not mapped (another node): the host call, after the stream's earlier work.
        _c.stream_synchronize(_stream_handle(stream))
    _c.signal_op(sa, value, _SIG_OPS[op], pe)


def signal_fetch(sig):
    """This PE's signal word sig[0]."""
    _require_init("vshmem.signal_fetch")
    return _c.signal_fetch(_signal("vshmem.signal_fetch", sig))


_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


def signal_wait_until(sig, cmp, value, stream=None, timeout=None):
    """Waits until this PE's sig[0] compares true ('eq', 'ne', 'gt', 'ge', 'lt', 'le') with value;
    returns the value seen. timeout (seconds): raise TimeoutError instead of waiting longer (the
    wait then polls, and Ctrl-C interrupts it). With a stream (GPU heap): later work on the stream
    waits instead, and the call returns None at once."""
    call = "vshmem.signal_wait_until"
    _require_init(call)
    sa = _signal(call, sig)
    if cmp not in _CMPS:
        raise _err(call, f"cmp must be one of {sorted(_CMPS)}, not {cmp!r}")
    value = int(value)
    if value < 0 or value >= 1 << 64:
        raise _err(call, f"value {value} does not fit in 64 unsigned bits")
    if stream is not None:
        _c.signal_wait_until_on_stream(sa, _CMPS[cmp], value, _stream_handle(stream))
        return None
    if timeout is None:
        return _c.signal_wait_until(sa, _CMPS[cmp], value)
    import time
    deadline = time.monotonic() + float(timeout)
    pause = 1e-6
    while True:
        seen = _c.signal_fetch(sa)
        if _COMPARE[cmp](seen, value):
            return seen
        if time.monotonic() > deadline:
            raise TimeoutError(f"vshmem: PE {_c.my_pe()}: {call}: the signal is still {seen} after "
                               f"{timeout} s (waiting for {cmp} {value})")
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)


def quiet(stream=None):
    """Completes this PE's puts (and _nbi gets); on `stream` when given."""
    _require_init("vshmem.quiet")
    if stream is not None:
        _c.quiet_on_stream(_stream_handle(stream))
    else:
        _c.quiet()


def fence():
    _require_init("vshmem.fence")
    _c.fence()


def barrier_all(stream=None):
    """quiet, then wait for every PE; on `stream` when given."""
    _require_init("vshmem.barrier_all")
    if stream is not None:
        _c.barrier_all_on_stream(_stream_handle(stream))
    else:
        _c.barrier_all()


def barrier(team=None, stream=None):
    """barrier_all(), or team.barrier() for a team."""
    if team is None:
        barrier_all(stream)
    else:
        team.barrier(stream)


def sync_all():
    _require_init("vshmem.sync_all")
    _c.sync_all()


# --- collectives ------------------------------------------------------------------------------

def _coll(call, dest, source, team):
    team = _WORLD if team is None else team
    h = team._handle(call)
    if team is not _WORLD and _c.team_my_pe(h) < 0:
        raise _err(call, "this PE is not a member of the team")
    # The allocations are left out: a traceback must not keep them referenced (free counts).
    d = (None,) + _symmetric(call, dest, "dest")[1:]
    s = (None,) + _symmetric(call, source, "source")[1:]
    if d[4] != s[4] or d[4] != _state.heap_gpu:
        raise _err(call, "dest and source must both be tensors on the GPU heap, or both arrays on "
                   "the host heap")
    return h, team, d, s


def _overlap(a, b):
    return a[1] < b[1] + b[2] and b[1] < a[1] + a[2]


# The world team's all-reduce and reduce-scatter of contiguous symmetric tensors (GPU heap) or
# C-contiguous NumPy arrays (host heap) take one native call (python/src/fast_reduce.cpp): it is
# what a training loop calls each step. It returns False, having done nothing, for anything else,
# and the general path below checks and raises.
_fast_reduce = _c.fast_reduce


def _fast_setup():
    """Tells the short path where the heap is, its dtypes with the reductions they have, and how
    to find torch's current stream (once torch is imported)."""
    if not _state.heap_gpu:
        _c.fast_configure(False, _state.npes, None, -1)
        try:
            import numpy as np
        except ImportError:
            return
        for name, code in _dtypes.CODE.items():
            if name == "bfloat16":
                continue
            ops = sum(1 << opc for opc in _dtypes.OPS.values() if _c.has_host_reduce(code, opc))
            if ops:
                _c.fast_dtype(np.dtype(name), code, _dtypes.SIZE[name], ops, 0)
        return
    torch = sys.modules.get("torch")
    current = None
    if torch is not None:
        current = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if current is None:
            def current(device):
                return torch.cuda.current_stream(device).cuda_stream
    _c.fast_configure(True, _state.npes, current, _state.heap_device)
    _state.fast_torch = torch is not None
    if torch is None:
        return
    for name, code in _dtypes.CODE.items():
        tdt = getattr(torch, name, None)
        if tdt is None or _dtypes.name_of(tdt) != name:
            continue
        bits = [sum(1 << opc for opc in _dtypes.OPS.values()
                    if (code, opc, sc) in _STREAM_REDUCE) for sc in (False, True)]
        if bits[0] or bits[1]:
            _c.fast_dtype(tdt, code, _dtypes.SIZE[name], bits[0], bits[1])


def _current_stream():
    """torch's current stream on the heap's device, as an int."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(_state.heap_device)
    return torch.cuda.current_stream().cuda_stream


def _reduce_general(dest, source, op="sum", team=None, stream=None):
    """vshmem.reduce's general path: any team, any array the checks accept, every message."""
    call = "vshmem.reduce"
    h, team, d, s = _coll(call, dest, source, team)
    if d[2] != s[2] or d[3] != s[3]:
        raise _err(call, f"dest has {d[2]} bytes of {d[3]}, source {s[2]} bytes of {s[3]}: "
                   "they must match")
    return _reduce(call, h, d, s, op, stream, False)


# reduce(dest, source, op="sum", team=None, stream=None): a native function (fast_reduce.cpp)
# that makes the world team's call itself, with no Python frame, and passes anything else, with
# its arguments as given, to _reduce_general.
_reduce_general.__qualname__ = "reduce"         # Python's TypeErrors name the user's call
reduce = _c.native_reduce(_reduce_general, False)
all_reduce = reduce


def _reduce(call, h, d, s, op, stream, scatter):
    if op not in _dtypes.OPS:
        raise _err(call, f"op must be one of {sorted(_dtypes.OPS)}, not {op!r}")
    code, opc = _dtypes.CODE[d[3]], _dtypes.OPS[op]
    n = d[2] // _dtypes.SIZE[d[3]]
    if not (d[1] == s[1] and not scatter) and _overlap(d, s):
        raise _err(call, "dest and source overlap without being the same array")
    if _state.heap_gpu:
        if (code, opc, scatter) not in _STREAM_REDUCE:
            raise _err(call, f"no {op} reduction of {d[3]} on the GPU")
        _c.reduce_on_stream(h, opc, code, d[1], s[1], n, _stream_handle(stream), scatter)
        return
    if not _c.has_host_reduce(code, opc):
        raise _err(call, f"no {op} reduction of {d[3]} on the host heap")
    if not scatter:
        _c.reduce(h, opc, code, d[1], s[1], n)
        return
    # Host heap reduce-scatter: reduce everything into a symmetric temporary, keep our block.
    tmp = _c.malloc(s[2], 64)
    try:
        _c.reduce(h, opc, code, tmp, s[1], s[2] // _dtypes.SIZE[s[3]])
        me = _c.team_my_pe(h)
        _c.getmem(d[1], tmp + me * d[2], d[2], _c.my_pe())
    finally:
        _c.free(tmp)


_STREAM_REDUCE = {(d, o, sc) for d in range(len(_dtypes.CODE)) for o in range(len(_dtypes.OPS))
                  for sc in (False, True) if _c.has_stream_reduce(d, o, sc)}


def _reduce_scatter_general(dest, source, op="sum", team=None, stream=None):
    """vshmem.reduce_scatter's general path (as _reduce_general)."""
    call = "vshmem.reduce_scatter"
    h, team, d, s = _coll(call, dest, source, team)
    npes = _c.team_n_pes(h)
    if d[3] != s[3] or s[2] != d[2] * npes:
        raise _err(call, f"source must hold {npes} blocks of dest's {d[2]} bytes of {d[3]} "
                   f"(it has {s[2]} bytes of {s[3]})")
    if _overlap(d, s):
        raise _err(call, "dest and source overlap")
    return _reduce(call, h, d, s, op, stream, True)


_reduce_scatter_general.__qualname__ = "reduce_scatter"
reduce_scatter = _c.native_reduce(_reduce_scatter_general, True)


def fcollect(dest, source, team=None, stream=None):
    """All-gather: dest receives every member's source, in team order (dest is n_pes times the
    size of source)."""
    call = "vshmem.fcollect"
    h, team, d, s = _coll(call, dest, source, team)
    npes = _c.team_n_pes(h)
    if d[2] != s[2] * npes or d[3] != s[3]:
        raise _err(call, f"dest must hold {npes} x source's {s[2]} bytes of {s[3]} (it has {d[2]} "
                   f"bytes of {d[3]})")
    if _overlap(d, s):
        raise _err(call, "dest and source overlap")
    if _state.heap_gpu:
        _c.fcollect_on_stream(h, d[1], s[1], s[2], _stream_handle(stream))
    else:
        _c.fcollectmem(h, d[1], s[1], s[2])


all_gather = fcollect


def alltoall(dest, source, team=None, stream=None):
    """Block j of member i's source lands in block i of member j's dest (n_pes equal blocks)."""
    call = "vshmem.alltoall"
    h, team, d, s = _coll(call, dest, source, team)
    npes = _c.team_n_pes(h)
    if d[2] != s[2] or d[3] != s[3] or s[2] % npes:
        raise _err(call, f"dest and source must have the same size and dtype, a multiple of "
                   f"{npes} blocks (dest {d[2]} bytes of {d[3]}, source {s[2]} of {s[3]})")
    if _overlap(d, s):
        raise _err(call, "dest and source overlap")
    block = s[2] // npes
    if _state.heap_gpu:
        _c.alltoall_on_stream(h, d[1], s[1], block, _stream_handle(stream))
    else:
        _c.alltoallmem(h, d[1], s[1], block)


def broadcast(dest, source, root=0, team=None, stream=None):
    """Every member's dest receives the root member's source (root numbered in the team)."""
    call = "vshmem.broadcast"
    h, team, d, s = _coll(call, dest, source, team)
    npes = _c.team_n_pes(h)
    r = _index(root)
    if r is None or r < 0 or r >= npes:
        raise _err(call, f"root {root!r} is not a member of the team (0..{npes - 1})")
    root = r
    if d[2] != s[2] or d[3] != s[3]:
        raise _err(call, f"dest has {d[2]} bytes of {d[3]}, source {s[2]} of {s[3]}: they must "
                   "match")
    if d[1] != s[1] and _overlap(d, s):
        raise _err(call, "dest and source overlap without being the same array")
    if _state.heap_gpu:
        _c.broadcast_on_stream(h, d[1], s[1], s[2], root, _stream_handle(stream))
    else:
        _c.broadcastmem(h, d[1], s[1], s[2], root)
