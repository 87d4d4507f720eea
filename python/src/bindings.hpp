// Shared by the files of the vshmem._vshmem extension.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "python/src/bindings_dtype.hpp"
#include "shmem.h"

namespace py = pybind11;

namespace vshmem::python {

// Raises vshmem.VshmemError with `text`.
[[noreturn]] void raise_error(const std::string& text);
// Raises vshmem.VshmemError with the runtime's last message when rc != 0.
void check(int rc, const char* call);
shmem_team_t team_of(uintptr_t handle);
// shmem_T_OP_reduce by (Dtype, ReduceOp) code, or nullptr where there is none (comm.cpp).
using HostReduceFn = int (*)(shmem_team_t, void*, const void*, size_t);
HostReduceFn host_reduce_fn(int dtype, int op);

void bind_memory(py::module_& m);
void bind_comm(py::module_& m);
void bind_stream(py::module_& m);
void bind_fast_reduce(py::module_& m);

}  // namespace vshmem::python
