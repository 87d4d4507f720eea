// Fresh random test data: never zero bytes, so a check cannot pass on memory left at zero.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace vshmem::testing {

inline std::vector<unsigned char> fresh_bytes(size_t n) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng() | 1);
  return v;
}

}  // namespace vshmem::testing
