// Settings that every PE must share (the heap's size and growth step, the symmetry checks, the
// memory backend, ...): a PE that differs would stall or corrupt the first collective that
// depends on them. shmem_init compares them across PEs before anything else starts.
#pragma once

#include <string>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::detail {

struct SharedSetting {
  std::string name;   // as the user sets it, e.g. "VSHMEM_HEAP_CHUNK_SIZE"
  std::string value;  // this PE's effective value, printable
};

// Collective. Ok when every PE has the same value for every setting; otherwise an error (the
// same on every PE) naming the variable and which PEs have which value.
Status check_settings_agree(Bootstrap& bootstrap, const std::vector<SharedSetting>& settings);

}  // namespace vshmem::detail
