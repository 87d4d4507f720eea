// LD_PRELOAD shim over UCX's ucp_put_nbx that counts the puts and those that ask for fast local
// completion (UCP_OP_ATTR_FLAG_FAST_CMPL, a bit of op_attr_mask). remote.c's put_params mode reads
// the counts through vshmem_test_ucp_put_counts(): the plugin's blocking puts must ask for it, its
// _nbi puts must not. Before session 22 the plugin put the bit into `flags`, where UCX never looks
// for it (the operation-specific flags of ucp_request_param_t). It counts ucp_get_nbx calls too
// (vshmem_test_ucp_get_count(), remote.c's get_params: which gets are the plugin's messages).
#include <dlfcn.h>
#include <ucp/api/ucp.h>

#include <atomic>

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

__attribute__((visibility("default"))) void vshmem_test_ucp_get_count(long* gets) {
  *gets = g_gets.load();
}

__attribute__((visibility("default"))) void vshmem_test_ucp_put_counts(long* puts, long* fast) {
  *puts = g_puts.load();
  *fast = g_fast.load();
}

}  // extern "C"
