// Helpers shared by the GoogleTest suites.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/common/config.hpp"

namespace vshmem::testing {

// Sets (or, with nullopt, unsets) an environment variable for the lifetime of the object, and
// puts the previous value back afterwards. The runtime reads the environment once (config.hpp):
// each change reloads it, as shmem_init would.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
    (void)config::load();
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
    (void)config::load();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace vshmem::testing
