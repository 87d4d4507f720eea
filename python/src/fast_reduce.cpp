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

// fast_reduce(dest, source, op, stream, scatter) -> bool
PyObject* fast_reduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "fast_reduce(dest, source, op, stream, scatter)");
    return nullptr;
  }
  FastState& s = state();
  if (!s.configured) Py_RETURN_FALSE;
  const bool scatter = PyObject_IsTrue(args[4]) == 1;
  Operand d, src;
  int rc = s.heap_gpu ? read_tensor(s, args[0], &d) : read_array(args[0], &d);
  if (rc == 1) rc = s.heap_gpu ? read_tensor(s, args[1], &src) : read_array(args[1], &src);
  if (rc < 0) return nullptr;
  if (rc == 0 || d.dtype != src.dtype) Py_RETURN_FALSE;
  const FastDtype* dt = find_dtype(s, d.dtype);
  const int op = op_index(s, args[2]);
  if (dt == nullptr || op < 0 || (dt->ops[scatter ? 1 : 0] & (1u << op)) == 0) Py_RETURN_FALSE;
  const bool overlap = d.addr < src.addr + src.bytes && src.addr < d.addr + d.bytes;
  if (scatter) {
    if (src.bytes != d.bytes * static_cast<size_t>(s.npes) || overlap) Py_RETURN_FALSE;
  } else if (d.bytes != src.bytes || (d.addr != src.addr && overlap)) {
    Py_RETURN_FALSE;
  }
  if (d.bytes % static_cast<size_t>(dt->size) != 0 || !symmetric(s, d.addr, d.bytes) ||
      !symmetric(s, src.addr, src.bytes)) {
    Py_RETURN_FALSE;
  }
  uintptr_t stream = 0;
  if (s.heap_gpu) {
    rc = read_stream(s, args[3], &stream);
    if (rc < 0) return nullptr;
    if (rc == 0) Py_RETURN_FALSE;
  } else if (args[3] != Py_None) {
    Py_RETURN_FALSE;  // the general path says the host heap takes no stream
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
    Py_RETURN_TRUE;
  }
  try {
    shmemx_clear_last_error();
    const uintptr_t world = reinterpret_cast<uintptr_t>(SHMEM_TEAM_WORLD);
    if (s.heap_gpu) {
      rc = stream::reduce(world, op, dt->code, d.addr, src.addr, n, stream, scatter);
      check(rc, scatter ? "reducescatter_on_stream" : "reduce_on_stream");
    } else {
      HostReduceFn fn = host_reduce_fn(dt->code, op);
      if (fn == nullptr) Py_RETURN_FALSE;  // the table said otherwise: let the general path say
      {
        py::gil_scoped_release nogil;
        rc = fn(SHMEM_TEAM_WORLD, reinterpret_cast<void*>(d.addr),
                reinterpret_cast<const void*>(src.addr), n);
      }
      check(rc, "shmem_reduce");
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
  Py_RETURN_TRUE;
}

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
  s.attr_dtype = PyUnicode_InternFromString("dtype");
  s.attr_is_contiguous = PyUnicode_InternFromString("is_contiguous");
  s.attr_data_ptr = PyUnicode_InternFromString("data_ptr");
  s.attr_nbytes = PyUnicode_InternFromString("nbytes");
  s.attr_cuda_stream = PyUnicode_InternFromString("cuda_stream");
  PyObject* f = PyCFunction_NewEx(&fast_reduce_def, nullptr, nullptr);
  if (f == nullptr) throw py::error_already_set();
  m.add_object("fast_reduce", py::reinterpret_steal<py::object>(f));
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
