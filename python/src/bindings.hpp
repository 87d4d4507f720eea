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

void bind_memory(py::module_& m);
void bind_comm(py::module_& m);
void bind_stream(py::module_& m);

}  // namespace vshmem::python
