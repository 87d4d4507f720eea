// Identical-VA agreement: every PE reserves the same range (DESIGN.md, The address space).
#pragma once

#include <memory>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {

// Collective. Each round: every PE proposes a free range, the proposals (and a few fixed
// candidates in rarely used parts of the address space) are tried in a fixed order; for each,
// every PE reserves exactly there and the outcomes are allgathered; on any failure all release
// and try the next. Bounded, then a clear error.
Result<std::shared_ptr<VirtualReservation>> agree_on_range(MemoryProvider& provider,
                                                           Bootstrap& bootstrap, size_t size,
                                                           size_t alignment);

}  // namespace vshmem
