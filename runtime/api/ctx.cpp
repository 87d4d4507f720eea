// Communication contexts. Every context reaches memory the same way on the host backend; a
// context carries its team, which gives meaning to the PE numbers passed with it.
#include "runtime/api/runtime.hpp"
#include "shmem.h"

using namespace vshmem::detail;

struct vshmem_ctx_s {
  int magic;
};

namespace {
constexpr int kCtxMagic = 0x63747864;
vshmem_ctx_s g_default_ctx{kCtxMagic};
}  // namespace

extern "C" {
shmem_ctx_t SHMEM_CTX_DEFAULT = &g_default_ctx;
}

namespace vshmem::detail {

int ctx_pe(vshmem_ctx_s* ctx, int pe, const char* call) {
  if (ctx == nullptr || ctx->magic != kCtxMagic) {
    fail(call, "%p is not a valid context (SHMEM_CTX_INVALID or destroyed)",
         static_cast<void*>(ctx));
  }
  return pe;
}

}  // namespace vshmem::detail
