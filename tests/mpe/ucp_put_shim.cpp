// LD_PRELOAD shim over UCX's ucp_put_nbx that counts the puts and those that ask for fast local
// completion (UCP_OP_ATTR_FLAG_FAST_CMPL, a bit of op_attr_mask). remote.c's put_params mode reads
// the counts through vshmem_test_ucp_put_counts(): the plugin's blocking puts must ask for it, its
// _nbi puts must not. Before session 22 the plugin put the bit into `flags`, where UCX never looks
// for it (the operation-specific flags of ucp_request_param_t). It counts ucp_get_nbx calls too
// (vshmem_test_ucp_get_count(), remote.c's get_params: which gets are the plugin's messages).
// With VSHMEM_TEST_LOSE_REQUESTS=1 it loses the plugin's header-only target-op requests that UCX
// reports the send of through a callback (a get message's request), as a broken connection
// would: each goes out as the plugin's hello message instead, which the target drops, and its
// callback gets UCS_ERR_CONNECTION_RESET from the next ucp_worker_progress call after the send
// completed, as UCX reports a failure found later (remote.c's get_lost).
#include <dlfcn.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace {
std::atomic<long> g_puts{0};
std::atomic<long> g_fast{0};
std::atomic<long> g_gets{0};

// libucp is loaded by the transport plugin, RTLD_LOCAL: not in the global scope that RTLD_NEXT
// searches, but already loaded.
void* real_symbol(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    if (void* ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD)) fn = dlsym(ucp, name);
  }
  return fn;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) ucs_status_ptr_t ucp_put_nbx(
    ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
    const ucp_request_param_t* param) {
  using PutFn = ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, uint64_t, ucp_rkey_h,
                                     const ucp_request_param_t*);
  static const auto real = reinterpret_cast<PutFn>(real_symbol("ucp_put_nbx"));
  g_puts.fetch_add(1);
  if ((param->op_attr_mask & UCP_OP_ATTR_FLAG_FAST_CMPL) != 0) g_fast.fetch_add(1);
  return real(ep, buffer, count, remote_addr, rkey, param);
}

__attribute__((visibility("default"))) ucs_status_ptr_t ucp_get_nbx(
    ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
    const ucp_request_param_t* param) {
  using GetFn = ucs_status_ptr_t (*)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h,
                                     const ucp_request_param_t*);
  static const auto real = reinterpret_cast<GetFn>(real_symbol("ucp_get_nbx"));
  g_gets.fetch_add(1);
  return real(ep, buffer, count, remote_addr, rkey, param);
}

// The plugin's active-message ids (plugin_ucx.cpp: kAmRequest, kAmHello).
constexpr unsigned kAmRequest = 17;
constexpr unsigned kAmHello = 19;

struct LostSend {
  ucp_send_nbx_callback_t cb;
  void* user;
  void* request = nullptr;
};
std::mutex g_lost_mutex;
std::vector<LostSend*> g_lost;  // sent, their failure not yet reported (ucp_worker_progress)

__attribute__((visibility("default"))) unsigned ucp_worker_progress(ucp_worker_h worker) {
  using ProgressFn = unsigned (*)(ucp_worker_h);
  static const auto real = reinterpret_cast<ProgressFn>(real_symbol("ucp_worker_progress"));
  unsigned n = real(worker);
  std::vector<LostSend*> due;
  {
    const std::lock_guard<std::mutex> lock(g_lost_mutex);
    due.swap(g_lost);
  }
  for (LostSend* lost : due) {
    lost->cb(lost->request, UCS_ERR_CONNECTION_RESET, lost->user);
    delete lost;
    ++n;
  }
  return n;
}

__attribute__((visibility("default"))) ucs_status_ptr_t ucp_am_send_nbx(
    ucp_ep_h ep, unsigned id, const void* header, size_t header_length, const void* buffer,
    size_t count, const ucp_request_param_t* param) {
  using SendFn = ucs_status_ptr_t (*)(ucp_ep_h, unsigned, const void*, size_t, const void*, size_t,
                                      const ucp_request_param_t*);
  static const auto real = reinterpret_cast<SendFn>(real_symbol("ucp_am_send_nbx"));
  static const bool lose = [] {
    const char* v = std::getenv("VSHMEM_TEST_LOSE_REQUESTS");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  if (!lose || id != kAmRequest || count != 0 ||
      (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) == 0) {
    return real(ep, id, header, header_length, buffer, count, param);
  }
  ucp_request_param_t p = *param;
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  auto* lost = new LostSend{param->cb.send, param->user_data};
  p.user_data = lost;
  p.cb.send = [](void* request, ucs_status_t, void* user) {
    auto* sent = static_cast<LostSend*>(user);
    sent->request = request;
    const std::lock_guard<std::mutex> lock(g_lost_mutex);
    g_lost.push_back(sent);
  };
  ucs_status_ptr_t r = real(ep, kAmHello, header, header_length, buffer, count, &p);
  if (UCS_PTR_IS_ERR(r)) delete lost;
  return r;
}

__attribute__((visibility("default"))) void vshmem_test_ucp_get_count(long* gets) {
  *gets = g_gets.load();
}

__attribute__((visibility("default"))) void vshmem_test_ucp_put_counts(long* puts, long* fast) {
  *puts = g_puts.load();
  *fast = g_fast.load();
}

}  // extern "C"
