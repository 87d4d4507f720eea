// Issue 19 item 5: a bootstrap collective costs no more after many others. Under PMIx a new key
// per collective (never removed: PMIx cannot delete one) made every fence carry every value ever
// put, so the cost grew with the number of collectives. Each PE checks every value (fresh data),
// then compares the median time of the last 150 allgathers with that of the first 150: a loose
// factor, so that a loaded machine does not make it fail (7.5x was seen on a fresh CI clone while
// another test ran), while the growth it guards against (0.49 -> 84 ms over these rounds, 170x)
// does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"

int main() {
  auto b = vshmem::create_bootstrap({});
  if (!b) {
    std::fprintf(stderr, "FAILED: %s\n", b.status().message().c_str());
    return 1;
  }
  vshmem::Bootstrap& boot = **b;
  const int n = boot.size();
  const int me = boot.rank();
  constexpr int kRounds = 1200;
  constexpr int kWindow = 150;
  constexpr size_t kBytes = 256;
  uint64_t seed = std::random_device{}();
  if (!boot.broadcast(&seed, sizeof(seed), 0)) return 1;
  std::vector<double> ms(kRounds);
  std::vector<unsigned char> mine(kBytes), all(kBytes * n);
  for (int i = 0; i < kRounds; ++i) {
    std::mt19937_64 gen(seed + static_cast<uint64_t>(i) * 1000003u + static_cast<uint64_t>(me));
    for (auto& c : mine) c = static_cast<unsigned char>(gen());
    std::fill(all.begin(), all.end(), 0xA5);  // poisoned
    const auto t0 = std::chrono::steady_clock::now();
    vshmem::Status st = boot.allgather(mine.data(), all.data(), kBytes);
    ms[i] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!st) {
      std::fprintf(stderr, "PE %d: FAILED: allgather %d: %s\n", me, i, st.message().c_str());
      return 1;
    }
    for (int pe = 0; pe < n; ++pe) {
      std::mt19937_64 g(seed + static_cast<uint64_t>(i) * 1000003u + static_cast<uint64_t>(pe));
      for (size_t k = 0; k < kBytes; ++k) {
        if (all[pe * kBytes + k] != static_cast<unsigned char>(g())) {
          std::fprintf(stderr, "PE %d: FAILED: allgather %d: wrong byte %zu from PE %d\n", me, i, k,
                       pe);
          return 1;
        }
      }
    }
  }
  const auto median = [&](int from) {
    std::vector<double> v(ms.begin() + from, ms.begin() + from + kWindow);
    std::nth_element(v.begin(), v.begin() + kWindow / 2, v.end());
    return v[kWindow / 2];
  };
  const double first = median(0), last = median(kRounds - kWindow);
  std::printf("PE %d (%s): median allgather %.3f ms over the first %d, %.3f ms over the last %d\n",
              me, boot.name(), first, kWindow, last, kWindow);
  if (last > 20 * first + 5.0) {
    std::fprintf(stderr, "PE %d: FAILED: the cost grew from %.3f to %.3f ms per allgather\n", me,
                 first, last);
    return 1;
  }
  return boot.barrier() ? 0 : 1;
}
