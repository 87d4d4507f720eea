// The program's global and static variables as symmetric objects (OpenSHMEM: "global and static
// variables" are symmetric data objects). They live in the main executable's writable PT_LOAD
// segments (.data, .bss), which a PIE executable loads at a different address on every PE: the
// copy of a variable on PE p is at p's segment base + the variable's offset from ours. Only the
// main executable counts: globals of shared libraries are not symmetric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/status.hpp"

namespace vshmem {

struct DataSegment {
  uintptr_t base = 0;  // ours, page-aligned
  size_t size = 0;
  std::vector<uintptr_t> bases;  // per PE

  bool contains(const void* addr, size_t bytes) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    return a >= base && a - base < size && bytes <= size - (a - base);
  }
  uint64_t offset_of(const void* addr) const { return reinterpret_cast<uintptr_t>(addr) - base; }

  // This process's segment: the main executable's writable PT_LOAD segments, from the start of
  // the lowest page to the end of the highest (dl_iterate_phdr). Not collective.
  static Result<DataSegment> find_own();
  // Collective: every PE learns every PE's base; the sizes must agree (the same executable
  // everywhere), else every PE fails naming one that differs.
  static Result<DataSegment> agree(Bootstrap& bootstrap);
};

}  // namespace vshmem
