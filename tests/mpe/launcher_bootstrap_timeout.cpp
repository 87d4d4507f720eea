// The last PE does not arrive at a barrier: with VSHMEM_BOOTSTRAP_TIMEOUT=2 every other PE must
// fail within the limit with a message that says so (and, where the bootstrap can tell, names
// the PE). Exits 1 with the message on the expected failure; the test checks the message.
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/bootstrap/bootstrap.hpp"

int main() {
  auto boot_r = vshmem::create_bootstrap({});
  if (!boot_r) {
    std::fprintf(stderr, "create_bootstrap: %s\n", boot_r.status().message().c_str());
    return 1;
  }
  vshmem::Bootstrap& boot = **boot_r;
  const int me = boot.rank(), n = boot.size();
  if (!boot.barrier()) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  if (me == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  vshmem::Status st = boot.barrier();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st.is_ok()) {
    std::fprintf(stderr, "PE %d: barrier succeeded although PE %d never arrived in time\n", me,
                 n - 1);
    return 1;
  }
  if (me != n - 1 && waited > 6) {
    std::fprintf(stderr, "PE %d: the failure took %.1f s, the limit is 2 s\n", me, waited);
    return 1;
  }
  std::fprintf(stderr, "expected failure after %.1f s: %s\n", waited, st.message().c_str());
  return 1;
}
