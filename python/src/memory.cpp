// Symmetric allocations and how Python sees them: NumPy arrays over host-heap memory, DLPack
// capsules (for torch.from_dlpack and any DLPack consumer) over either heap. Every view holds a
// reference to the package's Allocation object, so the memory outlives its views.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <vector>

#include "python/src/bindings.hpp"
#include "shmemx.h"

#if defined(VSHMEM_DLPACK_FROM_ATEN)
#include <ATen/dlpack.h>
#else
#include <dlpack/dlpack.h>
#endif

namespace vshmem::python {
namespace {

// The DLPack (legacy, unversioned) tensor, its shape, and the owner it keeps alive.
struct Exported {
  DLManagedTensor managed;
  std::vector<int64_t> shape;
  PyObject* owner;
};

void release_exported(DLManagedTensor* t) {
  auto* e = static_cast<Exported*>(t->manager_ctx);
  // Consumers may call the deleter from any thread (torch frees storage where the last
  // reference dies).
  py::gil_scoped_acquire gil;
  Py_XDECREF(e->owner);
  delete e;
}

void capsule_destructor(PyObject* capsule) {
  // A capsule no consumer took still owns its tensor; a consumed one was renamed.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  }
}

DLDataType dl_type(int code) {
  switch (static_cast<Dtype>(code)) {
    case Dtype::kInt8: return {kDLInt, 8, 1};
    case Dtype::kInt16: return {kDLInt, 16, 1};
    case Dtype::kInt32: return {kDLInt, 32, 1};
    case Dtype::kInt64: return {kDLInt, 64, 1};
    case Dtype::kUint8: return {kDLUInt, 8, 1};
    case Dtype::kUint16: return {kDLUInt, 16, 1};
    case Dtype::kUint32: return {kDLUInt, 32, 1};
    case Dtype::kUint64: return {kDLUInt, 64, 1};
    case Dtype::kFloat32: return {kDLFloat, 32, 1};
    case Dtype::kFloat64: return {kDLFloat, 64, 1};
    case Dtype::kFloat16: return {kDLFloat, 16, 1};
    case Dtype::kBfloat16: return {kDLBfloat, 16, 1};
    default: break;
  }
  raise_error("vshmem: unknown dtype code " + std::to_string(code));
}

py::capsule to_dlpack(uintptr_t addr, std::vector<int64_t> shape, int dtype, bool cuda,
                      int device_id, py::object owner) {
  auto* e = new Exported{};
  e->shape = std::move(shape);
  e->owner = owner.release().ptr();
  DLTensor& t = e->managed.dl_tensor;
  t.data = reinterpret_cast<void*>(addr);
  t.device = {cuda ? kDLCUDA : kDLCPU, cuda ? device_id : 0};
  t.ndim = static_cast<int32_t>(e->shape.size());
  t.dtype = dl_type(dtype);
  t.shape = e->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = release_exported;
  return py::capsule(&e->managed, "dltensor", capsule_destructor);
}

}  // namespace

void bind_memory(py::module_& m) {
  m.def("malloc", [](size_t bytes, size_t alignment) {
    shmemx_clear_last_error();
    void* p;
    {
      py::gil_scoped_release nogil;
      p = alignment > 0 ? shmem_align(alignment, bytes) : shmem_malloc(bytes);
    }
    if (p == nullptr && bytes > 0) {
      std::string last = shmemx_last_error();
      raise_error(last.empty() ? "vshmem.empty: shmem_malloc(" + std::to_string(bytes) +
                                     ") returned NULL: the symmetric heap is full "
                                     "(VSHMEM_SYMMETRIC_SIZE sets its size)"
                               : last);
    }
    return reinterpret_cast<uintptr_t>(p);
  });
  m.def("free", [](uintptr_t addr) {
    py::gil_scoped_release nogil;
    shmem_free(reinterpret_cast<void*>(addr));
  });
  m.def("ptr", [](uintptr_t addr, int pe) {
    return reinterpret_cast<uintptr_t>(shmem_ptr(reinterpret_cast<void*>(addr), pe));
  });
  m.def("team_ptr", [](uintptr_t team, uintptr_t addr, int pe) {
    return reinterpret_cast<uintptr_t>(
        shmem_team_ptr(team_of(team), reinterpret_cast<void*>(addr), pe));
  });
  // [addr, addr + bytes) is symmetric memory of this job (the committed heap is one range).
  m.def("is_symmetric", [](uintptr_t addr, size_t bytes) {
    const int me = shmem_my_pe();
    if (me < 0) return false;
    if (bytes == 0) bytes = 1;
    if (addr + bytes < addr) return false;
    return shmem_addr_accessible(reinterpret_cast<void*>(addr), me) != 0 &&
           shmem_addr_accessible(reinterpret_cast<void*>(addr + bytes - 1), me) != 0;
  });
  m.def("pe_accessible", [](int pe) { return shmem_pe_accessible(pe) != 0; });
  // A NumPy array over host memory at addr, keeping `owner` alive.
  m.def("numpy_view",
        [](uintptr_t addr, std::vector<ssize_t> shape, py::dtype dtype, py::object owner) {
          return py::array(dtype, shape, {}, reinterpret_cast<void*>(addr), owner);
        });
  // (address, bytes, C-contiguous) of a NumPy array, or None for anything else: one call instead
  // of __array_interface__, which builds a dict (about 2 us a call) on every RMA and collective.
  m.def("array_info", [](py::handle x) -> py::object {
    if (!py::isinstance<py::array>(x)) return py::none();
    auto a = py::reinterpret_borrow<py::array>(x);
    const bool c_contiguous = (a.flags() & py::array::c_style) != 0;
    return py::make_tuple(reinterpret_cast<uintptr_t>(a.data()), a.nbytes(), c_contiguous);
  });
  m.def("to_dlpack", &to_dlpack, py::arg("addr"), py::arg("shape"), py::arg("dtype"),
        py::arg("cuda"), py::arg("device_id"), py::arg("owner"));
}

}  // namespace vshmem::python
