#include "runtime/memory/host_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace vshmem {

bool rep_movsb_preferred_for(bool amd, unsigned family, bool fsrm) {
  return amd && family >= 0x1A && fsrm;
}

namespace {

bool probe() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  const unsigned max_leaf = a;
  // "AuthenticAMD" in EBX, EDX, ECX.
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  unsigned family = (a >> 8) & 0xF;
  if (family == 0xF) family += (a >> 20) & 0xFF;
  bool fsrm = false;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    fsrm = (d >> 4) & 1;
  }
  return rep_movsb_preferred_for(amd, family, fsrm);
#else
  return false;
#endif
}

}  // namespace

bool rep_movsb_preferred() {
  static const bool preferred = probe();
  return preferred;
}

// GCC's names for the sanitizers (the project builds its sanitizer trees with GCC).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define VSHMEM_REP_MOVSB 1
#endif

void host_copy_large(void* dst, const void* src, size_t n) {
#if defined(VSHMEM_REP_MOVSB)
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const bool overlap = d < s + n && s < d + n;
  if (!overlap && rep_movsb_preferred()) {
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
    return;
  }
#endif
  std::memmove(dst, src, n);
}

}  // namespace vshmem
