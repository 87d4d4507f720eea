// shmem_pe_quiet (OpenSHMEM 1.6): quiet toward some PEs only. Host transfers have completed at
// their targets when each call returns; what is left is the provider's completion (GPU copies
// and atomics) and the memory barrier that shmem_quiet gives, which cost the same for some PEs
// as for all: the PE numbers are checked, then the quiet is the full one.
#include "runtime/api/runtime.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

void pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes, const char* call) {
  Runtime& rt = runtime_for(call);
  if (npes > 0 && target_pes == nullptr) fail(call, "target_pes is NULL (npes %zu)", npes);
  for (size_t i = 0; i < npes; ++i) {
    const int pe = ctx != SHMEM_CTX_DEFAULT ? ctx_pe(ctx, target_pes[i], call) : target_pes[i];
    if (static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.n_pes)) {
      fail(call, "target_pes[%zu] = %d is not a valid PE (the job has PEs 0..%d)", i, pe,
           rt.n_pes - 1);
    }
  }
  if (ctx != SHMEM_CTX_DEFAULT && npes == 0) ctx_pe(ctx, 0, call);  // the context is checked
  quiet(rt, call);
}

}  // namespace

extern "C" {

void shmem_pe_quiet(const int* target_pes, size_t npes) {
  pe_quiet(SHMEM_CTX_DEFAULT, target_pes, npes, "shmem_pe_quiet");
}

void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int* target_pes, size_t npes) {
  pe_quiet(ctx, target_pes, npes, "shmem_ctx_pe_quiet");
}

}  // extern "C"
