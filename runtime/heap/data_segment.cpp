#include "runtime/heap/data_segment.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>

#include "runtime/common/log.hpp"

namespace vshmem {

Result<DataSegment> DataSegment::find_own() {
  struct Found {
    bool seen = false;
    uintptr_t low = UINTPTR_MAX, high = 0;
  } found;
  // The first object dl_iterate_phdr reports is the main executable.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* f = static_cast<Found*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0 || ph.p_memsz == 0) continue;
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          f->low = std::min(f->low, start);
          f->high = std::max(f->high, start + ph.p_memsz);
        }
        f->seen = true;
        return 1;  // the main executable only
      },
      &found);
  DataSegment seg;
  if (!found.seen || found.high <= found.low) return seg;  // no writable segment: nothing static
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  seg.base = found.low & ~(page - 1);
  seg.size = ((found.high + page - 1) & ~(page - 1)) - seg.base;
  return seg;
}

Result<DataSegment> DataSegment::agree(Bootstrap& bootstrap) {
  DataSegment seg;
  VSHMEM_ASSIGN_OR_RETURN(seg, find_own());
  struct Info {
    uint64_t base;
    uint64_t size;
  } mine{seg.base, seg.size};
  std::vector<Info> all(static_cast<size_t>(bootstrap.size()));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mine, all.data(), sizeof(mine)));
  seg.bases.resize(all.size());
  for (size_t p = 0; p < all.size(); ++p) {
    if (all[p].size != all[0].size) {
      return error(Code::kInvalidArgument,
                   log::format("the global and static variables of PE %zu span %llu bytes, those "
                               "of PE 0 %llu: every PE must run the same executable",
                               p, static_cast<unsigned long long>(all[p].size),
                               static_cast<unsigned long long>(all[0].size)));
    }
    seg.bases[p] = static_cast<uintptr_t>(all[p].base);
  }
  VSHMEM_INFO("global and static variables: [%#lx, +%zu) (PE 0's at %#lx)",
              static_cast<unsigned long>(seg.base), seg.size,
              static_cast<unsigned long>(seg.bases[0]));
  return seg;
}

}  // namespace vshmem
