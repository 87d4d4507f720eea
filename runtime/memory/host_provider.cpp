// The host provider: physical memory is a memfd, shared between processes by passing its
// descriptor; a reservation is a PROT_NONE anonymous mapping; mapping replaces part of it with
// MAP_FIXED|MAP_SHARED of the memfd, and unmapping puts PROT_NONE back so the VA stays reserved.
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/log.hpp"
#include "runtime/memory/host_atomic.hpp"
#include "runtime/memory/host_copy.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {
namespace {

Status sys_error(const char* call, int err) {
  return error(Code::kSystem, log::format("%s: %s", call, std::strerror(err)));
}

class HostPhysical final : public PhysicalAllocation {
 public:
  HostPhysical(int fd, size_t size, bool imported) : fd_(fd), size_(size), imported_(imported) {}
  ~HostPhysical() override {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t size() const override { return size_; }
  int fd() const { return fd_; }
  bool imported() const { return imported_; }
  // A peer's memory is mapped once; the mapping keeps the memory alive without the descriptor,
  // and keeping one descriptor per peer per chunk would run a PE into its open-file limit.
  void release_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  Result<ShareableHandle> export_handle(HandleKind kind) override {
    if (fd_ < 0) {
      return error(Code::kUnsupported, "this imported memory was mapped and its descriptor closed");
    }
    if (kind != HandleKind::kPosixFd) {
      return error(
          Code::kUnsupported,
          log::format("host memory exports only posix_fd handles, not %s", handle_kind_name(kind)));
    }
    int dup = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return sys_error("fcntl(F_DUPFD_CLOEXEC)", errno);
    return ShareableHandle::from_fd(dup);
  }

 private:
  int fd_;
  size_t size_;
  bool imported_;
};

class HostReservation final : public VirtualReservation {
 public:
  HostReservation(uintptr_t base, size_t size) : VirtualReservation(base, size) {}
  ~HostReservation() override { ::munmap(reinterpret_cast<void*>(base()), size()); }
};

class HostMapping final : public Mapping {
 public:
  HostMapping(std::shared_ptr<VirtualReservation> r, size_t offset,
              std::shared_ptr<PhysicalAllocation> p)
      : Mapping(std::move(r), offset, std::move(p)) {}
  ~HostMapping() override {
    // Put the reservation back in place of the mapping: the range stays ours until the
    // reservation itself goes. (A destructor has nobody to report a failure to.)
    (void)::mmap(address(), size(), PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
};

class HostProvider final : public MemoryProvider {
 public:
  const char* name() const override { return "host"; }
  bool is_device_memory() const override { return false; }
  bool creates_zeroed() const override { return true; }  // a new memfd's pages read as zero
  size_t granularity() const override { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }
  std::vector<HandleKind> handle_kinds() const override { return {HandleKind::kPosixFd}; }

  Result<uintptr_t> find_free_range(size_t size, size_t alignment) override {
    // Ask the kernel for room, with slack so the result can be aligned, then give it back.
    size_t span = size + alignment;
    void* p = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return sys_error("mmap(probe for free VA)", errno);
    ::munmap(p, span);
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    return (a + alignment - 1) / alignment * alignment;
  }

  Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t addr, size_t size) override {
    void* p = ::mmap(reinterpret_cast<void*>(addr), size, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
      return error(Code::kSystem,
                   log::format("mmap(reserve %#zx bytes at %#lx): %s", size,
                               static_cast<unsigned long>(addr), std::strerror(errno)));
    }
    if (reinterpret_cast<uintptr_t>(p) != addr) {  // kernels before 4.17 ignore NOREPLACE
      ::munmap(p, size);
      return error(Code::kSystem, log::format("mmap(reserve at %#lx): range is taken",
                                              static_cast<unsigned long>(addr)));
    }
    return std::shared_ptr<VirtualReservation>(std::make_shared<HostReservation>(addr, size));
  }

  Result<std::shared_ptr<PhysicalAllocation>> create(size_t size) override {
    int fd = ::memfd_create("vshmem-heap", MFD_CLOEXEC);
    if (fd < 0) return sys_error("memfd_create", errno);
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      int err = errno;
      ::close(fd);
      return sys_error("ftruncate(memfd)", err);
    }
    return std::shared_ptr<PhysicalAllocation>(std::make_shared<HostPhysical>(fd, size, false));
  }

  Result<std::shared_ptr<PhysicalAllocation>> import(ShareableHandle handle, size_t size) override {
    if (handle.kind() != HandleKind::kPosixFd) {
      return error(Code::kUnsupported, "host memory imports only posix_fd handles");
    }
    struct stat st {};
    if (::fstat(handle.fd(), &st) != 0) return sys_error("fstat(imported fd)", errno);
    if (static_cast<size_t>(st.st_size) < size) {
      return error(Code::kPeerFailure, log::format("imported memory has %lld bytes, expected %zu",
                                                   static_cast<long long>(st.st_size), size));
    }
    return std::shared_ptr<PhysicalAllocation>(
        std::make_shared<HostPhysical>(handle.release_fd(), size, true));
  }

  Result<std::unique_ptr<Mapping>> map(std::shared_ptr<VirtualReservation> reservation,
                                       size_t offset,
                                       std::shared_ptr<PhysicalAllocation> physical) override {
    auto* phys = dynamic_cast<HostPhysical*>(physical.get());
    if (phys == nullptr) return error(Code::kInvalidArgument, "map: not a host allocation");
    if (offset + phys->size() > reservation->size()) {
      return error(Code::kInvalidArgument,
                   log::format("map: [%zu, %zu) exceeds the reservation of %zu bytes", offset,
                               offset + phys->size(), reservation->size()));
    }
    if (phys->fd() < 0) {
      return error(Code::kInvalidArgument,
                   "map: this imported memory is mapped already (host memory from a peer is "
                   "mapped once)");
    }
    void* at = reinterpret_cast<void*>(reservation->base() + offset);
    void* p =
        ::mmap(at, phys->size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, phys->fd(), 0);
    if (p == MAP_FAILED) return sys_error("mmap(map memfd)", errno);
    if (phys->imported()) phys->release_fd();
    return std::unique_ptr<Mapping>(
        new HostMapping(std::move(reservation), offset, std::move(physical)));
  }

  Status copy(void* dst, const void* src, size_t bytes) override {
    host_copy(dst, src, bytes);
    return Status::ok();
  }

  Status atomic(const AtomicRequest& request, uint64_t* result) override {
    if (reinterpret_cast<uintptr_t>(request.address) % request.width != 0) {
      return error(Code::kInvalidArgument, log::format("atomic on %p: not aligned to %u bytes",
                                                       request.address, request.width));
    }
    uint64_t v;
    if (request.width == 4) {
      v = host_atomic<uint32_t>(request);
    } else if (request.width == 8) {
      v = host_atomic<uint64_t>(request);
    } else {
      return error(Code::kInvalidArgument, log::format("atomic width %u", request.width));
    }
    if (result != nullptr) *result = v;
    return Status::ok();
  }

  Status fill(void* dst, int c, size_t bytes) override {
    std::memset(dst, c, bytes);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<MemoryProvider> make_host_provider() { return std::make_unique<HostProvider>(); }

}  // namespace vshmem
