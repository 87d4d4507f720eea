#include "runtime/heap/va_agreement.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/common/log.hpp"

namespace vshmem {

Result<std::shared_ptr<VirtualReservation>> agree_on_range(MemoryProvider& provider,
                                                           Bootstrap& bootstrap, size_t size,
                                                           size_t alignment) {
  constexpr int kRounds = 3;
  const int n = bootstrap.size();
  std::string tried;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t mine = 0;
    if (auto proposal = provider.find_free_range(size, alignment)) mine = *proposal;
    std::vector<uint64_t> proposals(n);
    VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mine, proposals.data(), sizeof(mine)));
    // Fixed candidates above the usual mmap area's reach, in case every PE's own free range is
    // taken in some other PE (different library layouts under ASLR).
    std::vector<uint64_t> candidates;
    for (uint64_t p : proposals) {
      if (p != 0 && std::find(candidates.begin(), candidates.end(), p) == candidates.end()) {
        candidates.push_back(p);
      }
    }
    for (uint64_t fixed : {0x100000000000ull, 0x200000000000ull, 0x300000000000ull}) {
      fixed += static_cast<uint64_t>(round) * 0x40000000000ull;
      fixed = (fixed + alignment - 1) / alignment * alignment;
      candidates.push_back(fixed);
    }
    for (uint64_t candidate : candidates) {
      auto r = provider.reserve(candidate, size);
      int32_t ok = r.is_ok() ? 1 : 0;
      std::vector<int32_t> oks(n);
      VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&ok, oks.data(), sizeof(ok)));
      int refused = -1;
      for (int i = 0; i < n; ++i) {
        if (!oks[i]) {
          refused = i;
          break;
        }
      }
      if (refused < 0) {
        VSHMEM_INFO("symmetric range agreed at %#llx (%zu bytes, round %d)",
                    static_cast<unsigned long long>(candidate), size, round);
        return std::move(r).value();
      }
      tried += log::format("%s%#llx (PE %d refused)", tried.empty() ? "" : ", ",
                           static_cast<unsigned long long>(candidate), refused);
      // r (if ours succeeded) is released here, before the next candidate.
    }
  }
  return error(Code::kOutOfMemory,
               log::format("no virtual address range of %zu bytes is free on every PE; tried %s",
                           size, tried.c_str()));
}

}  // namespace vshmem
