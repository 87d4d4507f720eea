// Must not compile: a variable that is not in runtime/common/config.hpp's table cannot be read
// (tests/unit/config.cmake expects the compiler to reject this file).
#include "runtime/common/env.hpp"

bool read_an_undocumented_variable() {
  return vshmem::env::get("VSHMEM_NOT_IN_THE_TABLE").has_value();
}
