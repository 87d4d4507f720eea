// The path to the program's global and static variables (runtime/heap/data_segment.hpp), which
// are symmetric but live outside the heap, in each process's private memory: ours directly with
// the CPU, every other PE's through the remote path (UCX: CMA or shared memory on one node, the
// network across nodes; atomics performed by the target's progress thread with CPU atomics). They
// are host memory even when the heap is GPU memory, and no peer maps them: shmem_ptr gives NULL
// for another PE's copy.
#pragma once

#include <atomic>
#include <cstring>
#include <string>

#include "runtime/common/log.hpp"
#include "runtime/heap/data_segment.hpp"
#include "runtime/memory/host_atomic.hpp"
#include "runtime/transport/remote_path.hpp"

namespace vshmem {

class StaticPath final : public PeerPath {
 public:
  // remote may be null (UCX not available: unavailable says why); then only our own copies are
  // reachable.
  StaticPath(int my_pe, MemoryProvider& provider, RemotePath* remote, std::string unavailable)
      : my_pe_(my_pe), provider_(provider), remote_(remote), unavailable_(std::move(unavailable)) {
    caps_ = kPathRma | kPathTargetOps;
  }
  const char* name() const override { return "statics"; }
  bool reaches_peers() const { return remote_ != nullptr; }

  Status put(int pe, void* dest, const void* source, size_t bytes) override {
    if (pe == my_pe_) return copy(dest, source, bytes);
    VSHMEM_RETURN_IF_ERROR(reach(pe, dest));
    if (provider_.is_device_memory()) {
      // The source may be GPU memory of the heap, which UCX's host transports (CMA, shared
      // memory) cannot read: through a host buffer (seen on the H200: CMA refused a heap
      // address, gpu.statics_one_node).
      std::string host(bytes, '\0');
      VSHMEM_RETURN_IF_ERROR(provider_.copy(host.data(), source, bytes));
      VSHMEM_RETURN_IF_ERROR(remote_->put(pe, dest, host.data(), bytes));
      return remote_->quiet();
    }
    VSHMEM_RETURN_IF_ERROR(remote_->put(pe, dest, source, bytes));
    // The remote path's blocking put completes locally and is ordered only before that path's
    // own later operations; the signals, barriers and collective flags that follow a put to a
    // global may travel on the mapped path (heap memory), so the bytes must have landed first:
    // a quiet (the remote path's fence only orders its own operations: ucp_worker_fence).
    return remote_->quiet();
  }
  Status get(int pe, void* dest, const void* source, size_t bytes) override {
    if (pe == my_pe_) return copy(dest, source, bytes);
    VSHMEM_RETURN_IF_ERROR(reach(pe, source));
    if (provider_.is_device_memory()) {
      // dest may be GPU memory of the heap: through a host buffer (see put).
      std::string host(bytes, '\0');
      VSHMEM_RETURN_IF_ERROR(remote_->get(pe, host.data(), source, bytes));
      return provider_.copy(dest, host.data(), bytes);
    }
    return remote_->get(pe, dest, source, bytes);
  }
  // With a GPU heap the _nbi forms are the blocking ones (through a host buffer): completing
  // before quiet is allowed.
  Status put_nbi(int pe, void* dest, const void* source, size_t bytes) override {
    if (pe == my_pe_) return copy(dest, source, bytes);
    if (provider_.is_device_memory()) return put(pe, dest, source, bytes);
    VSHMEM_RETURN_IF_ERROR(reach(pe, dest));
    return remote_->put_nbi(pe, dest, source, bytes);
  }
  Status get_nbi(int pe, void* dest, const void* source, size_t bytes) override {
    if (pe == my_pe_) return copy(dest, source, bytes);
    if (provider_.is_device_memory()) return get(pe, dest, source, bytes);
    VSHMEM_RETURN_IF_ERROR(reach(pe, source));
    return remote_->get_nbi(pe, dest, source, bytes);
  }
  Status atomic(int pe, const AtomicRequest& request, uint64_t* result) override {
    if (pe == my_pe_) {
      *result = host_atomic_any(request);
      return Status::ok();
    }
    VSHMEM_RETURN_IF_ERROR(reach(pe, request.address));
    return remote_->atomic(pe, request, result);
  }
  Status fence() override {
    if (remote_ != nullptr) VSHMEM_RETURN_IF_ERROR(remote_->fence());
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }
  Status quiet() override {
    if (remote_ != nullptr) VSHMEM_RETURN_IF_ERROR(remote_->quiet());
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Status::ok();
  }

 private:
  // Our own variables are host memory; the other buffer may be GPU memory of the heap, which
  // only the provider may touch.
  Status copy(void* dst, const void* src, size_t bytes) {
    if (provider_.is_device_memory()) return provider_.copy(dst, src, bytes);
    std::memmove(dst, src, bytes);
    return Status::ok();
  }
  Status reach(int pe, const void* addr) {
    if (remote_ == nullptr) {
      return error(Code::kUnsupported,
                   log::format("the global or static variable at %p cannot be reached on PE %d: "
                               "another PE's global and static variables are reached through the "
                               "UCX transport plugin, which is not available (%s). Install UCX "
                               "(Debian: libucx0; build vshmem with libucx-dev), or allocate the "
                               "object with shmem_malloc",
                               addr, pe, unavailable_.c_str()));
    }
    return Status::ok();
  }

  const int my_pe_;
  MemoryProvider& provider_;
  RemotePath* remote_;
  const std::string unavailable_;
};

}  // namespace vshmem
