// The all-reduce and reduce-scatter of the world team in one native call: what a training loop
// calls every step, so its Python cost is the package's overhead over the C call (issue #20's
// target: at most 5 us). The Python version of this short path (run 15 on the H200) spent its
// time in a dozen interpreted steps (two calls to look up allocations, a stream lookup, tuple
// and dict work) and in pybind11's dispatch of an 8-argument call; here one METH_FASTCALL
// function reads the tensors' attributes through the C API, looks the addresses up in a copy of
// the package's allocation table and calls the reduction.
//
// It never raises for bad input: whatever it cannot accept (another type, non-contiguous,
// mismatched, not symmetric, a stream it does not know) returns False before anything was done,
// and the package's general path then checks everything and raises its own message. Only the
// reduction's own failure raises (VshmemError, with the runtime's message).
#include <algorithm>
#include <map>
#include <vector>

#include <pybind11/numpy.h>

#include "python/src/bindings.hpp"
#include "python/src/stream_ops.hpp"
#include "shmemx.h"

#if PY_VERSION_HEX < 0x03090000
// Python 3.8 has neither.
static PyObject* PyObject_CallMethodNoArgs(PyObject* self, PyObject* name) {
  return PyObject_CallMethodObjArgs(self, name, nullptr);
}
static PyObject* PyObject_CallOneArg(PyObject* f, PyObject* arg) {
  return PyObject_CallFunctionObjArgs(f, arg, nullptr);
}
#endif

namespace vshmem::python {
namespace {

// A dtype object the short path knows (a torch dtype, or a native NumPy dtype): its code, its
// size, and a bit per ReduceOp that has a reduction (all-reduce; reduce-scatter).
struct FastDtype {
  PyObject* dtype;  // owned
  int code;
  int size;
  unsigned ops[2];
};

struct FastState {
  bool configured = false;
  bool heap_gpu = false;
  bool dry_run = false;
  // The dry run's last call: op, dtype code, dest, source, elements, stream, scatter.
  uintptr_t last[7] = {};
  int npes = 0;
  PyObject* current_stream = nullptr;  // owned: device -> current stream (torch), or null
  PyObject* device = nullptr;          // owned: the heap's device ordinal, as an int
  std::vector<FastDtype> dtypes;
  std::map<uintptr_t, size_t> allocations;  // start -> bytes, as the package's table
  PyObject* names[kReduceOpCount] = {};     // owned: "sum", "prod", ...
  PyObject* params[5] = {};                 // owned: "dest", "source", "op", "team", "stream"
  PyObject* attr_dtype = nullptr;
  PyObject* attr_is_contiguous = nullptr;
  PyObject* attr_data_ptr = nullptr;
  PyObject* attr_nbytes = nullptr;
  PyObject* attr_cuda_stream = nullptr;
};

FastState& state() {
  // Lives as long as the process: the interpreter may still call in while it shuts down.
  static FastState* s = new FastState();
  return *s;
}

void clear_config(FastState& s) {
  for (FastDtype& d : s.dtypes) Py_DECREF(d.dtype);
  s.dtypes.clear();
  Py_CLEAR(s.current_stream);
  Py_CLEAR(s.device);
  s.configured = false;
}

const FastDtype* find_dtype(const FastState& s, PyObject* dtype) {
  for (const FastDtype& d : s.dtypes) {
    if (d.dtype == dtype) return &d;
  }
  return nullptr;
}

int op_index(const FastState& s, PyObject* op) {
  for (int i = 0; i < kReduceOpCount; ++i) {
    if (s.names[i] == op) return i;  // literals in the caller's code are interned
  }
  if (!PyUnicode_Check(op)) return -1;
  for (int i = 0; i < kReduceOpCount; ++i) {
    if (PyUnicode_Compare(s.names[i], op) == 0) return i;
  }
  return -1;
}

// Whether [addr, addr + bytes) lies in one live allocation.
bool symmetric(const FastState& s, uintptr_t addr, size_t bytes) {
  auto it = s.allocations.upper_bound(addr);
  if (it == s.allocations.begin()) return false;
  --it;
  return addr + bytes >= addr && addr + bytes <= it->first + it->second;
}

// What the short path needs of one array or tensor.
struct Operand {
  uintptr_t addr = 0;
  size_t bytes = 0;
  PyObject* dtype = nullptr;
  py::object hold;  // the reference to dtype, where it is a new one
};

// 1: read; 0: not something the short path takes (nothing raised); -1: an exception to pass on.
int give_up_on_lookup_error() {
  if (PyErr_ExceptionMatches(PyExc_AttributeError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
      PyErr_ExceptionMatches(PyExc_OverflowError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

int read_tensor(const FastState& s, PyObject* t, Operand* out) {
  out->hold = py::reinterpret_steal<py::object>(PyObject_GetAttr(t, s.attr_dtype));
  if (!out->hold) return give_up_on_lookup_error();
  out->dtype = out->hold.ptr();
  PyObject* contiguous = PyObject_CallMethodNoArgs(t, s.attr_is_contiguous);
  if (contiguous == nullptr) return give_up_on_lookup_error();
  const bool ok = contiguous == Py_True;
  Py_DECREF(contiguous);
  if (!ok) return 0;
  PyObject* ptr = PyObject_CallMethodNoArgs(t, s.attr_data_ptr);
  if (ptr == nullptr) return give_up_on_lookup_error();
  out->addr = PyLong_Check(ptr) ? static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(ptr)) : 0;
  Py_DECREF(ptr);
  if (PyErr_Occurred()) return give_up_on_lookup_error();
  PyObject* nbytes = PyObject_GetAttr(t, s.attr_nbytes);
  if (nbytes == nullptr) return give_up_on_lookup_error();
  out->bytes = PyLong_Check(nbytes) ? PyLong_AsSize_t(nbytes) : 0;
  Py_DECREF(nbytes);
  if (PyErr_Occurred()) return give_up_on_lookup_error();
  return out->addr != 0 && out->bytes != 0 ? 1 : 0;
}

int read_array(PyObject* x, Operand* out) {
  if (!py::isinstance<py::array>(x)) return 0;
  auto a = py::reinterpret_borrow<py::array>(x);
  if ((a.flags() & py::array::c_style) == 0) return 0;
  out->addr = reinterpret_cast<uintptr_t>(a.data());
  out->bytes = static_cast<size_t>(a.nbytes());
  // The array holds its descriptor.
  out->dtype = py::detail::array_proxy(x)->descr;
  return out->bytes != 0 ? 1 : 0;
}

// The stream as an integer: None -> the current stream (torch's, on the heap's device), an int,
// or an object with an integer `cuda_stream` (torch.cuda.Stream). 0 when it is none of these
// (__cuda_stream__ objects take the general path).
int read_stream(const FastState& s, PyObject* stream, uintptr_t* out) {
  PyObject* value;
  if (stream == Py_None) {
    if (s.current_stream == nullptr) {
      *out = 0;
      return 1;
    }
    value = PyObject_CallOneArg(s.current_stream, s.device);
  } else if (PyLong_CheckExact(stream)) {
    Py_INCREF(stream);
    value = stream;
  } else {
    value = PyObject_GetAttr(stream, s.attr_cuda_stream);
  }
  if (value == nullptr) return give_up_on_lookup_error();
  int rc = 0;
  if (PyLong_Check(value) && !PyBool_Check(value)) {
    const unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (PyErr_Occurred()) {
      rc = give_up_on_lookup_error();
    } else {
      *out = static_cast<uintptr_t>(v);
      rc = 1;
    }
  }
  Py_DECREF(value);
  return rc;
}

// The short path: 1 when it made the call, 0 when it declined (nothing done, nothing raised), -1
// with an exception set (the tensor's own error, or the reduction's failure).
int fast_reduce_call(FastState& s, PyObject* dest, PyObject* source, PyObject* op_name,
                     PyObject* stream_arg, bool scatter) {
  if (!s.configured) return 0;
  Operand d, src;
  int rc = s.heap_gpu ? read_tensor(s, dest, &d) : read_array(dest, &d);
  if (rc == 1) {
    if (source == dest) {  // in place (as torch.distributed's all_reduce): read it once
      src.addr = d.addr;
      src.bytes = d.bytes;
      src.dtype = d.dtype;
    } else {
      rc = s.heap_gpu ? read_tensor(s, source, &src) : read_array(source, &src);
    }
  }
  if (rc <= 0) return rc;
  if (d.dtype != src.dtype) return 0;
  const FastDtype* dt = find_dtype(s, d.dtype);
  const int op = op_index(s, op_name);
  if (dt == nullptr || op < 0 || (dt->ops[scatter ? 1 : 0] & (1u << op)) == 0) return 0;
  const bool overlap = d.addr < src.addr + src.bytes && src.addr < d.addr + d.bytes;
  if (scatter) {
    if (src.bytes != d.bytes * static_cast<size_t>(s.npes) || overlap) return 0;
  } else if (d.bytes != src.bytes || (d.addr != src.addr && overlap)) {
    return 0;
  }
  if (d.bytes % static_cast<size_t>(dt->size) != 0 || !symmetric(s, d.addr, d.bytes) ||
      !symmetric(s, src.addr, src.bytes)) {
    return 0;
  }
  uintptr_t stream = 0;
  if (s.heap_gpu) {
    rc = read_stream(s, stream_arg, &stream);
    if (rc <= 0) return rc;
  } else if (stream_arg != Py_None) {
    return 0;  // the general path says the host heap takes no stream
  }
  const size_t n = d.bytes / static_cast<size_t>(dt->size);
  if (s.dry_run) {
    const uintptr_t call[7] = {static_cast<uintptr_t>(op),
                               static_cast<uintptr_t>(dt->code),
                               d.addr,
                               src.addr,
                               n,
                               stream,
                               scatter};
    std::copy(call, call + 7, s.last);
    return 1;
  }
  try {
    shmemx_clear_last_error();
    const uintptr_t world = reinterpret_cast<uintptr_t>(SHMEM_TEAM_WORLD);
    if (s.heap_gpu) {
      rc = stream::reduce(world, op, dt->code, d.addr, src.addr, n, stream, scatter);
      check(rc, scatter ? "reducescatter_on_stream" : "reduce_on_stream");
    } else {
      HostReduceFn fn = host_reduce_fn(dt->code, op);
      if (fn == nullptr) return 0;  // the table said otherwise: let the general path say
      {
        py::gil_scoped_release nogil;
        rc = fn(SHMEM_TEAM_WORLD, reinterpret_cast<void*>(d.addr),
                reinterpret_cast<const void*>(src.addr), n);
      }
      check(rc, "shmem_reduce");
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return -1;
  }
  return 1;
}

// fast_reduce(dest, source, op, stream, scatter) -> bool: the short path alone (tests, benchmark).
PyObject* fast_reduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "fast_reduce(dest, source, op, stream, scatter)");
    return nullptr;
  }
  const int scatter = PyObject_IsTrue(args[4]);
  if (scatter < 0) return nullptr;
  const int rc = fast_reduce_call(state(), args[0], args[1], args[2], args[3], scatter == 1);
  if (rc < 0) return nullptr;
  return PyBool_FromLong(rc);
}

// vshmem.reduce and vshmem.reduce_scatter themselves: (dest, source, op='sum', team=None,
// stream=None) with no Python frame before the short path. `general` (the function's __self__)
// is the package's general path; it gets the arguments exactly as given whenever the short path
// declines or they do not bind plainly here (too many, an unknown or repeated keyword: it raises
// Python's own TypeError for those).
enum { kDest, kSource, kOp, kTeam, kStream, kParams };

int param_index(const FastState& s, PyObject* name) {
  for (int i = 0; i < kParams; ++i) {
    if (s.params[i] == name) return i;  // keyword names in the caller's code are interned
  }
  for (int i = 0; i < kParams; ++i) {
    if (PyUnicode_Compare(s.params[i], name) == 0) return i;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return -1;
}

PyObject* entry(PyObject* general, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                bool scatter) {
  FastState& s = state();
  PyObject* a[kParams] = {};
  // reduce_scatter on the host heap reduces through a temporary: the general path's work.
  bool bound = s.configured && nargs <= kParams && (!scatter || s.heap_gpu);
  for (Py_ssize_t i = 0; bound && i < nargs; ++i) a[i] = args[i];
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; bound && k < nkw; ++k) {
    const int i = param_index(s, PyTuple_GET_ITEM(kwnames, k));
    if (i < 0 || a[i] != nullptr) {
      bound = false;
    } else {
      a[i] = args[nargs + k];
    }
  }
  if (bound && a[kDest] != nullptr && a[kSource] != nullptr &&
      (a[kTeam] == nullptr || a[kTeam] == Py_None)) {
    const int rc = fast_reduce_call(s, a[kDest], a[kSource], a[kOp] ? a[kOp] : s.names[0],
                                    a[kStream] ? a[kStream] : Py_None, scatter);
    if (rc < 0) return nullptr;
    if (rc == 1) Py_RETURN_NONE;
  }
  return PyObject_Vectorcall(general, args, static_cast<size_t>(nargs), kwnames);
}

PyObject* reduce_entry(PyObject* general, PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames) {
  return entry(general, args, nargs, kwnames, false);
}

PyObject* reduce_scatter_entry(PyObject* general, PyObject* const* args, Py_ssize_t nargs,
                               PyObject* kwnames) {
  return entry(general, args, nargs, kwnames, true);
}

PyCFunction as_cfunction(PyObject* (*f)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*)) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

// The docstrings of vshmem.reduce and vshmem.reduce_scatter (the package keeps their general
// paths, vshmem/__init__.py).
PyMethodDef entry_defs[2] = {
    {"reduce", as_cfunction(&reduce_entry), METH_FASTCALL | METH_KEYWORDS,
     "reduce($self, dest, source, op='sum', team=None, stream=None)\n--\n\n"
     "All-reduce: every member's dest receives the combination of the members' source ('sum',\n"
     "'prod', 'min', 'max'; 'and', 'or', 'xor' for integers). dest and source are symmetric, of\n"
     "one dtype and size, the same array or disjoint. GPU heap: on `stream` (default torch's\n"
     "current stream), including float16 and bfloat16. all_reduce is the same function."},
    {"reduce_scatter", as_cfunction(&reduce_scatter_entry), METH_FASTCALL | METH_KEYWORDS,
     "reduce_scatter($self, dest, source, op='sum', team=None, stream=None)\n--\n\n"
     "source holds one block of dest's size per team member; member j's dest receives the\n"
     "combination of block j of every member's source. dest and source must not overlap."},
};

PyMethodDef fast_reduce_def = {
    "fast_reduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_reduce)),
    METH_FASTCALL,
    "fast_reduce(dest, source, op, stream, scatter) -> bool\n--\n\n"
    "The world team's reduction (scatter: reduce-scatter) of contiguous, symmetric dest and "
    "source in one call; False (nothing done) when the arguments need the general path."};

}  // namespace

void bind_fast_reduce(py::module_& m) {
  FastState& s = state();
  const char* names[kReduceOpCount] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  for (int i = 0; i < kReduceOpCount; ++i) {
    if (s.names[i] == nullptr) s.names[i] = PyUnicode_InternFromString(names[i]);
  }
  const char* params[kParams] = {"dest", "source", "op", "team", "stream"};
  for (int i = 0; i < kParams; ++i) {
    if (s.params[i] == nullptr) s.params[i] = PyUnicode_InternFromString(params[i]);
  }
  s.attr_dtype = PyUnicode_InternFromString("dtype");
  s.attr_is_contiguous = PyUnicode_InternFromString("is_contiguous");
  s.attr_data_ptr = PyUnicode_InternFromString("data_ptr");
  s.attr_nbytes = PyUnicode_InternFromString("nbytes");
  s.attr_cuda_stream = PyUnicode_InternFromString("cuda_stream");
  PyObject* f = PyCFunction_NewEx(&fast_reduce_def, nullptr, nullptr);
  if (f == nullptr) throw py::error_already_set();
  m.add_object("fast_reduce", py::reinterpret_steal<py::object>(f));
  // native_reduce(general, scatter) -> vshmem.reduce (reduce_scatter when scatter): the short
  // path, else general(*args, **kwargs).
  m.def("native_reduce", [](py::object general, bool scatter) {
    if (!PyCallable_Check(general.ptr())) throw py::type_error("general must be callable");
    py::str module("vshmem");
    PyObject* f = PyCFunction_NewEx(&entry_defs[scatter ? 1 : 0], general.ptr(), module.ptr());
    if (f == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(f);
  });
  // heap_gpu, n_pes, and the current-stream function (called with `device`; None: stream 0).
  m.def("fast_configure", [](bool heap_gpu, int npes, py::object current_stream, int device) {
    FastState& s = state();
    clear_config(s);
    s.heap_gpu = heap_gpu;
    s.npes = npes;
    if (!current_stream.is_none()) s.current_stream = current_stream.release().ptr();
    s.device = PyLong_FromLong(device);
    s.configured = true;
  });
  // A dtype object, its code and size, and the ReduceOp bits of its all-reduce and
  // reduce-scatter.
  m.def("fast_dtype", [](py::object dtype, int code, int size, unsigned ops, unsigned scatter_ops) {
    FastState& s = state();
    for (FastDtype& d : s.dtypes) {
      if (d.dtype == dtype.ptr()) {
        d.code = code;
        d.size = size;
        d.ops[0] = ops;
        d.ops[1] = scatter_ops;
        return;
      }
    }
    s.dtypes.push_back({dtype.release().ptr(), code, size, {ops, scatter_ops}});
  });
  m.def("fast_reset", [] {
    FastState& s = state();
    clear_config(s);
    s.allocations.clear();
  });
  m.def("fast_add_allocation",
        [](uintptr_t addr, size_t bytes) { state().allocations[addr] = bytes; });
  m.def("fast_remove_allocation", [](uintptr_t addr) { state().allocations.erase(addr); });
  m.def("fast_allocations", [] {
    py::list out;
    for (const auto& [addr, bytes] : state().allocations) out.append(py::make_tuple(addr, bytes));
    return out;
  });
  // Benchmarks and tests: every check, no reduction (what the Python layer costs by itself).
  m.def("fast_set_dry_run", [](bool on) { state().dry_run = on; });
  m.def("fast_dry_run_last", [] {
    const uintptr_t* l = state().last;
    return py::make_tuple(static_cast<int>(l[0]), static_cast<int>(l[1]), l[2], l[3], l[4], l[5],
                          l[6] != 0);
  });
}

}  // namespace vshmem::python
