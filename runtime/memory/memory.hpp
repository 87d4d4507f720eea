// Memory layer: physical allocations, virtual reservations and mappings as RAII objects, and the
// providers that make them (host: memfd + mmap; cuda: the VMM driver API). A provider exposes what
// it can do; the heap and transport layers choose.
//
// Ownership: a Mapping holds shared references to its VirtualReservation and its
// PhysicalAllocation. Destroying the Mapping unmaps first; the physical handle is released when
// the last reference goes, and the VA range is freed when the last mapping into it and its owner
// are gone. The teardown order therefore holds by construction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/memory/fabric_domain.hpp"
#include "vshmem/device/impl/proxy_mailbox.h"

namespace vshmem {

enum class HandleKind { kNone, kPosixFd, kFabric };
const char* handle_kind_name(HandleKind kind);

// A handle a peer can import. A POSIX FD is owned (closed on destruction unless released).
class ShareableHandle {
 public:
  static constexpr size_t kFabricBytes = 64;

  ShareableHandle() = default;
  static ShareableHandle from_fd(int fd);
  static ShareableHandle from_fabric(const void* bytes);
  ShareableHandle(ShareableHandle&& other) noexcept;
  ShareableHandle& operator=(ShareableHandle&& other) noexcept;
  ShareableHandle(const ShareableHandle&) = delete;
  ShareableHandle& operator=(const ShareableHandle&) = delete;
  ~ShareableHandle();

  HandleKind kind() const { return kind_; }
  int fd() const { return fd_; }
  int release_fd();  // caller now owns the descriptor
  const std::array<uint8_t, kFabricBytes>& fabric() const { return fabric_; }

 private:
  HandleKind kind_ = HandleKind::kNone;
  int fd_ = -1;
  std::array<uint8_t, kFabricBytes> fabric_{};
};

class PhysicalAllocation {
 public:
  virtual ~PhysicalAllocation() = default;
  virtual size_t size() const = 0;
  // A fresh handle of the given kind for a peer to import.
  virtual Result<ShareableHandle> export_handle(HandleKind kind) = 0;
};

class VirtualReservation {
 public:
  virtual ~VirtualReservation() = default;
  uintptr_t base() const { return base_; }
  size_t size() const { return size_; }

 protected:
  VirtualReservation(uintptr_t base, size_t size) : base_(base), size_(size) {}

 private:
  uintptr_t base_;
  size_t size_;
};

// One physical allocation mapped at reservation->base() + offset. Derived classes unmap in their
// destructor, which runs before the base releases its references.
class Mapping {
 public:
  virtual ~Mapping() = default;
  void* address() const { return reinterpret_cast<void*>(reservation_->base() + offset_); }
  size_t offset() const { return offset_; }
  size_t size() const { return physical_->size(); }
  const std::shared_ptr<PhysicalAllocation>& physical() const { return physical_; }

 protected:
  Mapping(std::shared_ptr<VirtualReservation> reservation, size_t offset,
          std::shared_ptr<PhysicalAllocation> physical)
      : reservation_(std::move(reservation)), offset_(offset), physical_(std::move(physical)) {}

 private:
  std::shared_ptr<VirtualReservation> reservation_;  // declared first: released last
  size_t offset_;
  std::shared_ptr<PhysicalAllocation> physical_;
};

// Host-issued atomic on mapped memory. Operands and results are the raw bits of the value,
// zero-extended to 64; width is 4 or 8 bytes.
enum class AtomicOp {
  kFetch,        // result = *addr
  kSet,          // *addr = operand
  kSwap,         // result = *addr; *addr = operand
  kCompareSwap,  // result = *addr; if (result == compare) *addr = operand
  kFetchAdd,     // integer add (two's complement: signed and unsigned alike)
  kFetchAnd,
  kFetchOr,
  kFetchXor,
};

struct AtomicRequest {
  AtomicOp op = AtomicOp::kFetch;
  void* address = nullptr;
  unsigned width = 8;
  uint64_t operand = 0;
  uint64_t compare = 0;
};

// A multicast object (NVLink SHARP): one range of addresses backed by the memory that each of its
// devices bound to it. A store through a mapping of it reaches every device's copy; a
// multimem.ld_reduce reads all copies and combines them. Destroying it unmaps, unbinds this PE's
// memory and releases the handle.
class MulticastObject {
 public:
  virtual ~MulticastObject() = default;
  virtual size_t size() const = 0;
  virtual Result<ShareableHandle> export_handle(HandleKind kind) = 0;
  // Adds this PE's device. Every device must be added before any PE binds memory.
  virtual Status add_device() = 0;
  // Binds all of `physical` (this PE's memory, from the same provider) at `offset` in the object.
  virtual Status bind(size_t offset, std::shared_ptr<PhysicalAllocation> physical) = 0;
  // Maps the whole object at a fresh address range, read/write for this PE's device; returns it.
  virtual Result<uintptr_t> map() = 0;
};

// What a provider offers for multicast objects. Nothing here calls cuMulticastCreate unless
// VSHMEM_ENABLE_MULTICAST=1 is set and the device reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED.
class MulticastSupport {
 public:
  virtual ~MulticastSupport() = default;
  // Ok when the device and the driver can make multicast objects; else why not.
  virtual Status usable() const = 0;
  // The minimum granularity for an object of n_devices: sizes and offsets of bindings.
  virtual Result<size_t> granularity(size_t size, int n_devices) = 0;
  // A new object of `size` bytes for n_devices, exportable as `kind`.
  virtual Result<std::unique_ptr<MulticastObject>> create(size_t size, int n_devices,
                                                          HandleKind kind) = 0;
  // The object another PE created and exported (a POSIX FD is consumed).
  virtual Result<std::unique_ptr<MulticastObject>> import(ShareableHandle handle, size_t size) = 0;
};

// Memory outside the symmetric heap that the runtime keeps for its own exchanges with the device
// (the device proxy's request ring): never shared with peers, freed on destruction.
enum class BufferKind {
  // Page-locked host memory that the device reads and writes at the host's own address (cuda:
  // cuMemHostAlloc DEVICEMAP | PORTABLE, checked with cuMemHostGetDevicePointer).
  kDeviceMappedHost,
  // The device's global memory (cuda: cuMemAlloc): device atomics on it stay on the GPU.
  kDevice,
};
inline const char* buffer_kind_name(BufferKind kind) {
  return kind == BufferKind::kDevice ? "device memory" : "device-mapped host memory";
}

class Buffer {
 public:
  virtual ~Buffer() = default;
  void* address() const { return address_; }
  size_t size() const { return size_; }

 protected:
  Buffer(void* address, size_t size) : address_(address), size_(size) {}

 private:
  void* address_;
  size_t size_;
};

class MemoryProvider {
 public:
  virtual ~MemoryProvider() = default;
  virtual const char* name() const = 0;  // "host" or "cuda"
  // True when the memory lives on a GPU: host code must not dereference it directly.
  virtual bool is_device_memory() const = 0;
  // Chunk sizes and VA ranges are multiples of this.
  virtual size_t granularity() const = 0;
  // Handle kinds this provider can export, most preferred first.
  virtual std::vector<HandleKind> handle_kinds() const = 0;

  // A VA range of `size` bytes, aligned to `alignment`, that is free in this process now: a
  // proposal for the identical-VA agreement (nothing stays reserved).
  virtual Result<uintptr_t> find_free_range(size_t size, size_t alignment) = 0;
  // Reserve exactly [addr, addr + size); an error if any part is taken.
  virtual Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t addr, size_t size) = 0;
  virtual Result<std::shared_ptr<PhysicalAllocation>> create(size_t size) = 0;
  // Takes ownership of the handle (a POSIX FD is consumed).
  virtual Result<std::shared_ptr<PhysicalAllocation>> import(ShareableHandle handle,
                                                             size_t size) = 0;
  // Map and grant this process (for cuda: every local device that may touch it) read/write.
  virtual Result<std::unique_ptr<Mapping>> map(std::shared_ptr<VirtualReservation> reservation,
                                               size_t offset,
                                               std::shared_ptr<PhysicalAllocation> physical) = 0;

  // The memory the application itself mapped at [address, address + size), as this provider's
  // physical allocations in address order (each holding its own reference; their sizes add up
  // to size), exportable as `kind`: what shmemx_buffer_register_symmetric maps into the heap.
  // cuda: whole cuMemCreate allocations of this PE's device, found with
  // cuMemRetainAllocationHandle. kUnsupported with the cause for memory that cannot be shared by
  // handle (cudaMalloc memory; any memory for the host provider).
  virtual Result<std::vector<std::shared_ptr<PhysicalAllocation>>> retain_mapped(void* address,
                                                                                 size_t size,
                                                                                 HandleKind kind) {
    (void)address;
    (void)size;
    (void)kind;
    return error(Code::kUnsupported,
                 std::string("the symmetric heap is ") + name() +
                     " memory: only GPU memory made with cuMemCreate can join it "
                     "(VSHMEM_BACKEND=cuda)");
  }

  // Host-issued data movement between any two addresses this process can name (mapped memory or
  // ordinary host memory). Completes before returning.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // copy() started and left running, for pipelines (the remote path's staged transfers keep
  // several chunks in flight while the network moves others): returns a ticket for
  // copy_test(). Default: copy(), complete before it returns (ticket 0).
  virtual Result<uint64_t> copy_start(void* dst, const void* src, size_t bytes) {
    VSHMEM_RETURN_IF_ERROR(copy(dst, src, bytes));
    return uint64_t{0};
  }
  // Whether the copy of `ticket` has completed: then its buffers may be reused and the ticket is
  // spent (test each one until it says true or fails, and not after). Never waits; any thread.
  virtual Result<bool> copy_test(uint64_t ticket) {
    (void)ticket;
    return true;
  }
  // Host-issued atomic, atomic with respect to every other atomic on the location (device ones
  // included for cuda). Writes the fetched value to *result when result is not null.
  virtual Status atomic(const AtomicRequest& request, uint64_t* result) = 0;
  // Set *dst to bytes of value c.
  virtual Status fill(void* dst, int c, size_t bytes) = 0;
  // Whether memory from create() reads as zero until written (so that shmem_init need not clear
  // its internal objects in a new heap: a fill touches, and for host memory faults in, every page
  // of the 1-3 MiB of them, most of which a host-only program never uses).
  virtual bool creates_zeroed() const { return false; }

  // Locality, for the transport layer's choice of which peers to map: a token describing where
  // this PE's memory lives (host: 0; cuda: the device's identity), exchanged between PEs, and
  // whether this PE can map and access the memory of a node-local peer with the given token.
  virtual uint64_t locality_token() const { return 0; }
  virtual bool can_map_peer(uint64_t peer_token) const { return true; }
  // The CUDA ordinal of the device holding this provider's memory; -1 for host memory.
  virtual int device_ordinal() const { return -1; }
  // Where code loaded at run time (a CUmodule, or a CUlibrary when `library`) keeps its global
  // variable `name` in this provider's device context: the address (for copy()) and the size.
  // Code::kInvalidArgument naming the cause when the code does not define it; kUnsupported for
  // host memory.
  struct LoadedGlobal {
    void* address = nullptr;
    size_t bytes = 0;
  };
  virtual Result<LoadedGlobal> loaded_global(const void* code, bool library, const char* name) {
    (void)code;
    (void)library;
    (void)name;
    return error(Code::kUnsupported, "the symmetric heap is not GPU memory");
  }
  // Whether an MPS server serves that device (the driver's CU_DEVICE_ATTRIBUTE_MPS_ENABLED): then
  // the kernels of PEs sharing it run at once instead of time-sliced. False for host memory.
  virtual bool mps_enabled() const { return false; }
  // An error once the device can run no more work in this process (a kernel trapped, asserted
  // or touched a bad address: CUDA's sticky errors); ok otherwise and for host memory. Cheap,
  // never waits; any thread.
  virtual Status device_fault() const { return Status::ok(); }
  // Bytes of memory behind the provider's allocations (the GPU's total memory); 0 when it has
  // no fixed capacity (host memory).
  virtual uint64_t memory_capacity() const { return 0; }
  // Where this PE's device sits in a multi-node NVLink domain (usable = 0: nowhere, or fabric
  // handles are not usable here).
  virtual FabricIdentity fabric_identity() const { return {}; }
  // Multicast objects on this provider's device; null when the provider has none (host memory).
  virtual MulticastSupport* multicast() { return nullptr; }
  // Completes host-issued transfers still in flight: for GPU memory, the calling thread's
  // synchronous CUDA copies that returned before landing (cuda provider).
  virtual Status quiet() { return Status::ok(); }
  // Host memory that copy() moves to and from this provider's memory at full speed: the staging
  // (bounce) buffers of transfers the network cannot make directly. Page-locked for cuda (a copy
  // from pageable memory goes through the driver's own staging at a fraction of the speed);
  // ordinary host memory otherwise. Released with free_staging.
  virtual Result<void*> alloc_staging(size_t bytes) {
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (p == nullptr) return error(Code::kOutOfMemory, "staging buffer: out of host memory");
    return p;
  }
  virtual void free_staging(void* p) { std::free(p); }
  // Host memory allocated elsewhere (shared memory another process maps too) made what
  // alloc_staging gives: a buffer copy() moves to and from this provider's memory at full speed.
  // cuda: page-locked and known to every context (cuMemHostRegister, portable); nothing for host
  // memory. Undone with unregister_host before the memory is unmapped.
  virtual Status register_host(void* p, size_t bytes) {
    (void)p;
    (void)bytes;
    return Status::ok();
  }
  virtual void unregister_host(void* p) { (void)p; }
  // The inbound mailbox (vshmem/device/impl/proxy_mailbox.h), made on the first call and kept:
  // from then on atomic() posts its requests there, and copy_start() its copies of up to
  // settings.copy_max bytes between this GPU's memory and host memory, for a kernel of this process
  // that waits in a vshmem call to perform, with a one-thread kernel kept queued for when none
  // waits; a request not performed within settings.timeout_ns fails (and the mailbox with it). The
  // view goes into the device state. kUnsupported for host memory.
  struct InboundSettings {
    uint64_t timeout_ns = 60'000'000'000ull;
    uint64_t look_ns = proxy::kMailboxLookNs;      // Mailbox::look_ns
    size_t copy_max = proxy::kMailboxBounceBytes;  // 0: copies never go through the mailbox
  };
  virtual Result<proxy::MailboxView> inbound_mailbox(const InboundSettings& settings) {
    (void)settings;
    return error(Code::kUnsupported, "inbound atomic mailbox: the heap is not GPU memory");
  }
  // `bytes` of `kind`, zeroed. kUnsupported for host memory (no device to share it with).
  virtual Result<std::unique_ptr<Buffer>> allocate(BufferKind kind, size_t bytes) {
    (void)bytes;
    return error(Code::kUnsupported, std::string(buffer_kind_name(kind)) +
                                         ": the symmetric heap is not GPU memory (no device)");
  }
};

// The memfd + mmap provider. Always available.
std::unique_ptr<MemoryProvider> make_host_provider();

}  // namespace vshmem

namespace vshmem {

struct ProviderOptions {
  int local_rank = 0;  // this PE's index among the PEs of its node
  int local_size = 1;
  // Whether VSHMEM_BACKEND=auto tries GPU memory first. shmem_init passes false for programs
  // that do not link the device library: their code reaches symmetric objects with the CPU,
  // which cannot load or store GPU memory.
  bool auto_tries_device = true;
  // When not null: set to the backend chosen and why, for SHMEM_INFO.
  std::string* chosen_because = nullptr;
};

// VSHMEM_BACKEND=auto|cuda|host. auto picks cuda when options.auto_tries_device and a device is
// usable, else host, and says which and why at VSHMEM_DEBUG=info; cuda without a usable device
// is an error.
Result<std::unique_ptr<MemoryProvider>> create_memory_provider(const ProviderOptions& options);

// CUDA loads a kernel at its first launch by default (lazy loading, CUDA_MODULE_LOADING=LAZY since
// CUDA 12.2), and that load waits for the kernels the process is running. With PEs behind the
// device proxy this is a deadlock across PEs: a kernel waits for a remote PE, whose proxy and
// progress threads need the CUDA driver (staging copies, target-side atomics) while its own first
// launch of another kernel holds the driver until the waiting kernels end (seen on the H200:
// both processes in cuLaunchKernel, their progress threads in cuMemcpyAsync). Eager loading loads
// every kernel when the context is made, so launches never wait.
enum class ModuleLoading {
  kEagerSet,    // CUDA_MODULE_LOADING=EAGER was set for this process
  kUserChoice,  // the variable was set already: the user's choice stands
  kCudaStarted  // libcuda is loaded in this process already: too late to choose
};
// Sets CUDA_MODULE_LOADING=EAGER unless the variable is set or CUDA started in this process.
ModuleLoading prefer_eager_module_loading();
// Whether CUDA reports lazy kernel loading in this process; false without a usable driver.
bool cuda_loads_lazily();

}  // namespace vshmem
