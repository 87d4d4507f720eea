// Bulk copies between host buffers: the host heap's puts and gets on the mapped path and the
// collectives' pushes.
//
// The C library's memcpy copies with `rep movsb` from a few KiB up to a limit it sets per CPU, and
// above it with vector loads and stores. On AMD processors glibc (2.36, Debian 12) sets that limit
// to the L2 cache's size (1 MiB per core on Zen 5). On Zen 5 with fast short `rep movsb` (FSRM)
// the instruction is the faster one above that size too: measured on the 2-core CI box (one core,
// 16 blocks copied in turn, best of 5, bench/RESULTS.md, issue #15 session 31), 1 MiB 34.9
// against 29.9 GB/s, 2 MiB 28.9 against 23.2, 64 MiB 20.3 against 17.4, whatever the buffers'
// alignment, and the same below 1 MiB (both use it there). host_copy takes `rep movsb` for copies
// of kRepMovsbFrom bytes or more where rep_movsb_preferred() says so, and the C library's memmove
// everywhere else (other processors keep its choice: not measured here). Sanitizer builds always
// take memmove, which AddressSanitizer and ThreadSanitizer check (they do not see into the asm).
#pragma once

#include <cstddef>
#include <cstring>

namespace vshmem {

constexpr size_t kRepMovsbFrom = size_t{256} << 10;

// Whether a processor with these CPUID facts copies large blocks with `rep movsb`: AMD family
// 0x1A (Zen 5) or later with FSRM.
bool rep_movsb_preferred_for(bool amd, unsigned family, bool fsrm);
// rep_movsb_preferred_for this processor (CPUID, once).
bool rep_movsb_preferred();

// host_copy of kRepMovsbFrom bytes or more (out of line: the small copies' path stays one compare
// in front of memmove).
void host_copy_large(void* dst, const void* src, size_t n);

// Copies n bytes from src to dst; the ranges may overlap (then as memmove).
inline void host_copy(void* dst, const void* src, size_t n) {
  if (n < kRepMovsbFrom) {
    std::memmove(dst, src, n);
    return;
  }
  host_copy_large(dst, src, n);
}

}  // namespace vshmem
