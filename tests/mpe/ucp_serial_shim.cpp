// LD_PRELOAD shim over the UCX calls that act on a worker, its endpoints and its requests: it
// fails the process when two threads are inside them at once. The transport plugin creates its
// worker UCS_THREAD_MODE_SERIALIZED and holds its own lock around every such call
// (runtime/transport/worker_lock.hpp); one call missed there is a data race inside UCX that no
// sanitizer sees (UCX is not instrumented). Nested calls of one thread are allowed: UCX calls the
// plugin's callbacks from inside ucp_worker_progress, and they call UCX again. Used by remote.c's
// threads mode (application threads and the progress thread of each PE on the worker at once).
// ucp_request_check_status is left out: it only reads the request (no lock in either mode).
#include <dlfcn.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<void*> g_owner{nullptr};
std::atomic<const char*> g_owner_call{nullptr};
thread_local int t_depth = 0;

// libucp is loaded by the transport plugin, RTLD_LOCAL: not in the global scope that RTLD_NEXT
// searches, but already loaded.
void* real_symbol(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    if (void* ucp = dlopen("libucp.so.0", RTLD_NOW | RTLD_NOLOAD)) fn = dlsym(ucp, name);
  }
  if (fn == nullptr) {
    std::fprintf(stderr, "ucp_serial_shim: %s not found\n", name);
    std::abort();
  }
  return fn;
}

class Inside {
 public:
  explicit Inside(const char* call) {
    if (t_depth++ != 0) return;
    void* const self = __builtin_thread_pointer();
    void* other = nullptr;
    if (!g_owner.compare_exchange_strong(other, self)) {
      const char* theirs = g_owner_call.load();
      std::fprintf(stderr,
                   "ucp_serial_shim: two threads inside the UCX worker at once: %s entered "
                   "while another thread was in %s\n",
                   call, theirs != nullptr ? theirs : "(a call)");
      std::fflush(stderr);
      std::abort();
    }
    g_owner_call.store(call);
  }
  ~Inside() {
    if (--t_depth != 0) return;
    g_owner_call.store(nullptr);
    g_owner.store(nullptr);
  }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

template <class Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(real_symbol(name));
}

}  // namespace

// One wrapper per call: enter, forward to UCX, leave.
#define VSHMEM_SERIAL_SHIM(ret, name, params, args)                   \
  extern "C" __attribute__((visibility("default"))) ret name params { \
    static const auto fn = real<ret(*) params>(#name);                \
    const Inside inside(#name);                                       \
    return fn args;                                                   \
  }

VSHMEM_SERIAL_SHIM(unsigned, ucp_worker_progress, (ucp_worker_h w), (w))
VSHMEM_SERIAL_SHIM(ucs_status_t, ucp_worker_arm, (ucp_worker_h w), (w))
VSHMEM_SERIAL_SHIM(ucs_status_t, ucp_worker_fence, (ucp_worker_h w), (w))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_worker_flush_nbx,
                   (ucp_worker_h w, const ucp_request_param_t* p), (w, p))
VSHMEM_SERIAL_SHIM(ucs_status_t, ucp_ep_create,
                   (ucp_worker_h w, const ucp_ep_params_t* p, ucp_ep_h* ep), (w, p, ep))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_ep_close_nbx, (ucp_ep_h ep, const ucp_request_param_t* p),
                   (ep, p))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_ep_flush_nbx, (ucp_ep_h ep, const ucp_request_param_t* p),
                   (ep, p))
VSHMEM_SERIAL_SHIM(void, ucp_ep_print_info, (ucp_ep_h ep, FILE* f), (ep, f))
VSHMEM_SERIAL_SHIM(ucs_status_t, ucp_ep_rkey_unpack,
                   (ucp_ep_h ep, const void* buffer, ucp_rkey_h* rkey), (ep, buffer, rkey))
VSHMEM_SERIAL_SHIM(void, ucp_rkey_destroy, (ucp_rkey_h rkey), (rkey))
VSHMEM_SERIAL_SHIM(ucs_status_t, ucp_rkey_ptr, (ucp_rkey_h rkey, uint64_t raddr, void** addr),
                   (rkey, raddr, addr))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_put_nbx,
                   (ucp_ep_h ep, const void* buffer, size_t count, uint64_t raddr, ucp_rkey_h rkey,
                    const ucp_request_param_t* p),
                   (ep, buffer, count, raddr, rkey, p))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_get_nbx,
                   (ucp_ep_h ep, void* buffer, size_t count, uint64_t raddr, ucp_rkey_h rkey,
                    const ucp_request_param_t* p),
                   (ep, buffer, count, raddr, rkey, p))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_atomic_op_nbx,
                   (ucp_ep_h ep, ucp_atomic_op_t op, const void* buffer, size_t count,
                    uint64_t raddr, ucp_rkey_h rkey, const ucp_request_param_t* p),
                   (ep, op, buffer, count, raddr, rkey, p))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_am_send_nbx,
                   (ucp_ep_h ep, unsigned id, const void* header, size_t header_length,
                    const void* buffer, size_t count, const ucp_request_param_t* p),
                   (ep, id, header, header_length, buffer, count, p))
VSHMEM_SERIAL_SHIM(ucs_status_ptr_t, ucp_am_recv_data_nbx,
                   (ucp_worker_h w, void* data_desc, void* buffer, size_t count,
                    const ucp_request_param_t* p),
                   (w, data_desc, buffer, count, p))
VSHMEM_SERIAL_SHIM(void, ucp_request_free, (void* request), (request))
