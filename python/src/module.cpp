// vshmem._vshmem: the C API as Python functions over raw addresses. The package (vshmem/*.py)
// checks arguments (the C calls end the job on bad input, as OpenSHMEM specifies) and turns
// arrays and tensors into addresses. A non-zero return becomes vshmem.VshmemError carrying the
// runtime's own message (shmemx_last_error).
#include "python/src/bindings.hpp"

#include <cstring>

#include "shmemx.h"

namespace vshmem::python {

namespace {
PyObject* g_error_type = nullptr;
}

void raise_error(const std::string& text) {
  PyErr_SetString(g_error_type, text.c_str());
  throw py::error_already_set();
}

void check(int rc, const char* call) {
  if (rc == 0) return;
  const char* last = shmemx_last_error();
  std::string text = (last != nullptr && *last != '\0')
                         ? std::string(last)
                         : std::string(call) + " failed (return code " + std::to_string(rc) + ")";
  shmemx_clear_last_error();
  raise_error(text);
}

shmem_team_t team_of(uintptr_t handle) { return reinterpret_cast<shmem_team_t>(handle); }

namespace {

void bind_setup(py::module_& m) {
  m.def("init", [] {
    int provided = 0;
    shmemx_clear_last_error();
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    }
    check(rc, "shmem_init_thread");
  });
  m.def("init_uniqueid", [](py::bytes uid, int rank, int nranks) {
    std::string raw = uid;
    if (raw.size() != sizeof(shmemx_uniqueid_t)) {
      raise_error("vshmem.init: a unique ID is " + std::to_string(sizeof(shmemx_uniqueid_t)) +
                  " bytes, not " + std::to_string(raw.size()));
    }
    shmemx_uniqueid_t id;
    std::memcpy(&id, raw.data(), sizeof(id));
    shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
    shmemx_clear_last_error();
    check(shmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr), "shmemx_set_attr_uniqueid_args");
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = shmemx_init_attr(SHMEMX_INIT_WITH_UNIQUEID, &attr);
    }
    check(rc, "shmemx_init_attr");
  });
  m.def("get_uniqueid", [] {
    shmemx_uniqueid_t id;
    shmemx_clear_last_error();
    check(shmemx_get_uniqueid(&id), "shmemx_get_uniqueid");
    return py::bytes(reinterpret_cast<const char*>(&id), sizeof(id));
  });
  m.def("finalize", [] {
    py::gil_scoped_release nogil;
    shmem_finalize();
  });
  m.def("global_exit", [](int status) { shmem_global_exit(status); });
  m.def("my_pe", &shmem_my_pe);
  m.def("n_pes", &shmem_n_pes);
  m.def("last_error", [] { return std::string(shmemx_last_error()); });
  m.def("version", [] {
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    return py::make_tuple(major, minor);
  });
  m.attr("UNIQUEID_BYTES") = static_cast<int>(sizeof(shmemx_uniqueid_t));
}

void bind_teams(py::module_& m) {
  m.attr("TEAM_WORLD") = reinterpret_cast<uintptr_t>(SHMEM_TEAM_WORLD);
  m.attr("TEAM_SHARED") = reinterpret_cast<uintptr_t>(SHMEM_TEAM_SHARED);
  m.attr("TEAM_NODE") = reinterpret_cast<uintptr_t>(SHMEMX_TEAM_NODE);
  m.attr("TEAM_INVALID") = reinterpret_cast<uintptr_t>(SHMEM_TEAM_INVALID);
  m.def("team_my_pe", [](uintptr_t t) { return shmem_team_my_pe(team_of(t)); });
  m.def("team_n_pes", [](uintptr_t t) { return shmem_team_n_pes(team_of(t)); });
  m.def("team_translate_pe", [](uintptr_t src, int pe, uintptr_t dest) {
    return shmem_team_translate_pe(team_of(src), pe, team_of(dest));
  });
  m.def("team_split_strided", [](uintptr_t parent, int start, int stride, int size) {
    shmem_team_t t = SHMEM_TEAM_INVALID;
    shmemx_clear_last_error();
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = shmem_team_split_strided(team_of(parent), start, stride, size, nullptr, 0, &t);
    }
    check(rc, "shmem_team_split_strided");
    return reinterpret_cast<uintptr_t>(t);
  });
  m.def("team_split_2d", [](uintptr_t parent, int xrange) {
    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    shmemx_clear_last_error();
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = shmem_team_split_2d(team_of(parent), xrange, nullptr, 0, &x, nullptr, 0, &y);
    }
    check(rc, "shmem_team_split_2d");
    return py::make_tuple(reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(y));
  });
  m.def("team_sync", [](uintptr_t t) {
    shmemx_clear_last_error();
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = shmem_team_sync(team_of(t));
    }
    check(rc, "shmem_team_sync");
  });
  m.def("team_destroy", [](uintptr_t t) {
    py::gil_scoped_release nogil;
    shmem_team_destroy(team_of(t));
  });
}

}  // namespace
}  // namespace vshmem::python

PYBIND11_MODULE(_vshmem, m) {
  using namespace vshmem::python;
  m.doc() = "vshmem's C API over raw addresses (use the vshmem package instead)";
  static py::exception<std::runtime_error> error(m, "VshmemError", PyExc_RuntimeError);
  g_error_type = error.ptr();
  bind_setup(m);
  bind_teams(m);
  bind_memory(m);
  bind_comm(m);
  bind_stream(m);
  bind_fast_reduce(m);
}
