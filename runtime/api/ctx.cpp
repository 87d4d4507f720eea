// Communication contexts. On the host backend every context reaches memory the same way and each
// operation completes before it returns, so a context needs no transport state of its own: it
// carries its team (which gives meaning to the PE numbers passed with it) and its options.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "runtime/api/team.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace {

constexpr uint32_t kCtxMagic = 0x63747864;
constexpr long kKnownOptions = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;

vshmem_ctx_s g_default_ctx{kCtxMagic, &g_team_table[kWorldSlot], 0, pthread_t{}};

// Context objects live in one fixed pool and are recycled, never freed: a handle is checked to
// point at a pool entry before it is read (a garbage handle gets a message, not a crash), and a
// stale one still points at an entry whose magic says whether it is live.
constexpr size_t kMaxContexts = 4096;
vshmem_ctx_s g_ctx_pool[kMaxContexts];
size_t g_ctx_pool_used = 0;
std::mutex g_ctx_mutex;
std::vector<vshmem_ctx_s*> g_live_ctx;
std::vector<vshmem_ctx_s*> g_free_ctx;

bool is_context_object(const vshmem_ctx_s* c) {
  if (c == &g_default_ctx) return true;
  const auto a = reinterpret_cast<uintptr_t>(c);
  const auto base = reinterpret_cast<uintptr_t>(g_ctx_pool);
  return a >= base && a < base + sizeof(g_ctx_pool) && (a - base) % sizeof(vshmem_ctx_s) == 0;
}

int create(vshmem_team_s* team, long options, shmem_ctx_t* ctx, const char* call) {
  if (ctx == nullptr) fail(call, "ctx is NULL");
  *ctx = SHMEM_CTX_INVALID;
  if (options & ~kKnownOptions) {
    log::message(log::Level::kError, "%s: unknown context options %#lx", call,
                 options & ~kKnownOptions);
    return 1;
  }
  std::lock_guard<std::mutex> lock(g_ctx_mutex);
  vshmem_ctx_s* c;
  if (!g_free_ctx.empty()) {
    c = g_free_ctx.back();
    g_free_ctx.pop_back();
  } else if (g_ctx_pool_used < kMaxContexts) {
    c = &g_ctx_pool[g_ctx_pool_used++];
  } else {
    log::message(log::Level::kError, "%s: %zu contexts exist already (the most at once)", call,
                 kMaxContexts);
    return 1;
  }
  *c = vshmem_ctx_s{kCtxMagic, team, options, pthread_self()};
  g_live_ctx.push_back(c);
  *ctx = c;
  return 0;
}

// Caller holds g_ctx_mutex.
void release(vshmem_ctx_s* c) {
  c->magic = 0;
  c->team = nullptr;
  g_live_ctx.erase(std::find(g_live_ctx.begin(), g_live_ctx.end(), c));
  g_free_ctx.push_back(c);
}

}  // namespace

extern "C" {
shmem_ctx_t SHMEM_CTX_DEFAULT = &g_default_ctx;
}

namespace vshmem::detail {

int ctx_pe(vshmem_ctx_s* ctx, int pe, const char* call) {
  if (ctx == nullptr || !is_context_object(ctx) || ctx->magic != kCtxMagic) {
    fail(call, "%p is not a valid context (SHMEM_CTX_INVALID, destroyed, or never a context)",
         static_cast<void*>(ctx));
  }
  if ((ctx->options & SHMEM_CTX_PRIVATE) && !pthread_equal(ctx->owner, pthread_self())) {
    fail(call, "context %p was created SHMEM_CTX_PRIVATE by another thread",
         static_cast<void*>(ctx));
  }
  vshmem_team_s* team = ctx->team;
  if (team == &g_team_table[kWorldSlot]) return pe;  // world numbering is the identity
  if (team->magic != kTeamMagic) fail(call, "the context's team was destroyed");
  if (pe < 0 || pe >= team->group.size()) {
    fail(call, "PE %d is not a PE of the context's team (its PEs are 0..%d)", pe,
         team->group.size() - 1);
  }
  return team->group.members[pe];
}

void destroy_team_contexts(vshmem_team_s* team) {
  std::lock_guard<std::mutex> lock(g_ctx_mutex);
  std::vector<vshmem_ctx_s*> doomed;
  for (vshmem_ctx_s* c : g_live_ctx) {
    if (c->team == team) doomed.push_back(c);
  }
  for (vshmem_ctx_s* c : doomed) release(c);
}

}  // namespace vshmem::detail

extern "C" {

int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  runtime_for("shmem_ctx_create");
  return create(&g_team_table[kWorldSlot], options, ctx, "shmem_ctx_create");
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  constexpr const char* kCall = "shmem_team_create_ctx";
  runtime_for(kCall);
  vshmem_team_s* t = team_lookup(team);
  if (t == nullptr) {
    if (ctx == nullptr) fail(kCall, "ctx is NULL");
    *ctx = SHMEM_CTX_INVALID;
    if (team != SHMEM_TEAM_INVALID) {
      log::message(log::Level::kError, "%s: %p is not a valid team of this PE", kCall,
                   static_cast<void*>(team));
    }
    return 1;
  }
  return create(t, options, ctx, kCall);
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  constexpr const char* kCall = "shmem_ctx_destroy";
  Runtime& rt = runtime_for(kCall);
  if (ctx == SHMEM_CTX_INVALID) return;
  if (ctx == SHMEM_CTX_DEFAULT) fail(kCall, "SHMEM_CTX_DEFAULT cannot be destroyed");
  ctx_pe(ctx, 0, kCall);  // validates the handle and the calling thread
  // The specification makes destroy complete the context's outstanding operations.
  quiet(rt, kCall);
  std::lock_guard<std::mutex> lock(g_ctx_mutex);
  release(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  if (team == nullptr) return 1;
  if (ctx == nullptr || !is_context_object(ctx) || ctx->magic != kCtxMagic) {
    *team = SHMEM_TEAM_INVALID;
    return 1;
  }
  *team = ctx->team;
  return 0;
}

}  // extern "C"
