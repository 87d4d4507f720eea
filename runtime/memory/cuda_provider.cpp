// The cuda provider: physical memory is cuMemCreate, a reservation is cuMemAddressReserve, a
// mapping is cuMemMap + cuMemSetAccess. Every object it makes holds the device (and with it the
// retained primary context), so the context outlives the last mapping whatever order the owners
// drop them in.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/stall_watch.hpp"
#include "runtime/memory/cuda_caps.hpp"
#include "runtime/memory/cuda_driver.hpp"
#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/inbound_mailbox.hpp"

namespace vshmem::detail {
namespace {

static_assert(sizeof(CUmemFabricHandle) == ShareableHandle::kFabricBytes,
              "ShareableHandle's fabric bytes must hold a CUmemFabricHandle");

CUmemAllocationHandleType cu_handle_type(HandleKind kind) {
  switch (kind) {
    case HandleKind::kPosixFd: return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case HandleKind::kFabric: return CU_MEM_HANDLE_TYPE_FABRIC;
    case HandleKind::kNone: break;
  }
  return CU_MEM_HANDLE_TYPE_NONE;
}

// The device a provider works on: its retained primary context, and the ranges mapped through
// the provider (host atomics are only issued inside them: a kernel touching an unmapped address
// would fault and poison the context for the whole process).
class CudaDevice {
 public:
  CudaDevice(const CudaDriver& driver, int ordinal, CUdevice dev, CUcontext ctx)
      : driver_(driver), ordinal_(ordinal), dev_(dev), ctx_(ctx) {}
  ~CudaDevice() {
    // cuDevicePrimaryCtxRelease does not unset the context where it is current; a thread left
    // holding a released primary context crashes the driver on its next cuCtxGetDevice. So the
    // thread we made it current in gets its previous context back (when this runs there).
    if (made_current_) {
      CUcontext current = nullptr;
      if (driver_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == ctx_ &&
          pthread_equal(pthread_self(), made_current_in_)) {
        CUresult r = driver_.cuCtxSetCurrent(previous_current_);
        if (r != CUDA_SUCCESS) {
          VSHMEM_WARN("cuCtxSetCurrent(previous context): %s", driver_.describe(r).c_str());
        }
      }
    }
    CUresult r = driver_.cuDevicePrimaryCtxRelease(dev_);
    if (r != CUDA_SUCCESS) {
      VSHMEM_WARN("cuDevicePrimaryCtxRelease(device %d): %s", ordinal_,
                  driver_.describe(r).c_str());
    }
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const CudaDriver& driver() const { return driver_; }
  int ordinal() const { return ordinal_; }
  CUdevice device() const { return dev_; }
  // Makes the primary context current in the calling thread, remembering what was current.
  Status make_current() {
    CUcontext current = nullptr;
    VSHMEM_RETURN_IF_ERROR(driver_.check(driver_.cuCtxGetCurrent(&current), "cuCtxGetCurrent"));
    if (current == ctx_) return Status::ok();
    if (current != nullptr) {
      VSHMEM_INFO(
          "replacing the calling thread's current context with device %d's primary "
          "context",
          ordinal_);
    }
    VSHMEM_RETURN_IF_ERROR(
        driver_.check(driver_.cuCtxSetCurrent(ctx_),
                      log::format("cuCtxSetCurrent(primary context of device %d)", ordinal_)));
    made_current_ = true;
    made_current_in_ = pthread_self();
    previous_current_ = current;
    return Status::ok();
  }
  CUcontext context() const { return ctx_; }

  void add_range(uintptr_t base, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    ranges_[base] = size;
  }
  void remove_range(uintptr_t base) {
    std::lock_guard<std::mutex> lock(mu_);
    ranges_.erase(base);
  }
  bool contains(uintptr_t addr, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin()) return false;
    --it;
    return addr >= it->first && addr + bytes <= it->first + it->second && addr + bytes >= addr;
  }

 private:
  const CudaDriver& driver_;
  int ordinal_;
  CUdevice dev_;
  CUcontext ctx_;
  bool made_current_ = false;
  pthread_t made_current_in_{};
  CUcontext previous_current_ = nullptr;
  std::mutex mu_;
  std::map<uintptr_t, size_t> ranges_;
};

// Makes the device's primary context current for the scope when another (or none) is, and puts
// the previous one back: provider calls may come from any thread (the proxy, the application).
//
// It also puts the calling thread in the relaxed stream-capture mode for its life: in the default
// (global) mode a graph capture running in any application thread forbids "potentially unsafe"
// calls (copies, memsets, launches, stream synchronization) in every thread, and the forbidden
// call ends that capture. Our calls are never part of the application's graph; many run in our
// own threads (the progress thread writing a remote PE's data into the heap, the device proxy),
// where they would otherwise break a capture in the application's thread.
class ScopedContext {
 public:
  explicit ScopedContext(const CudaDevice& device) : driver_(device.driver()) {
    relaxed_ = driver_.cuThreadExchangeStreamCaptureMode(&saved_mode_) == CUDA_SUCCESS;
    CUcontext current = nullptr;
    CUresult r = driver_.cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS) {
      status_ = driver_.check(r, "cuCtxGetCurrent");
      return;
    }
    if (current == device.context()) return;
    r = driver_.cuCtxPushCurrent(device.context());
    if (r != CUDA_SUCCESS) {
      status_ = driver_.check(
          r, log::format("cuCtxPushCurrent(primary context of device %d)", device.ordinal()));
      return;
    }
    pushed_ = true;
  }
  ~ScopedContext() {
    if (pushed_) {
      CUcontext popped = nullptr;
      CUresult r = driver_.cuCtxPopCurrent(&popped);
      if (r != CUDA_SUCCESS) VSHMEM_WARN("cuCtxPopCurrent: %s", driver_.describe(r).c_str());
    }
    if (relaxed_) (void)driver_.cuThreadExchangeStreamCaptureMode(&saved_mode_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  const Status& status() const { return status_; }

 private:
  const CudaDriver& driver_;
  Status status_;
  bool pushed_ = false;
  CUstreamCaptureMode saved_mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;  // exchanged in, then out
  bool relaxed_ = false;
};

// Exports and imports of a generic allocation handle, shared by heap chunks and multicast
// objects (the driver treats both alike): `what` names the object in messages.
Result<ShareableHandle> export_generic(const CudaDriver& drv, CUmemGenericAllocationHandle handle,
                                       HandleKind kind, const std::string& what) {
  const std::string call =
      log::format("cuMemExportToShareableHandle(%s, %s)", what.c_str(), handle_kind_name(kind));
  if (kind == HandleKind::kPosixFd) {
    int fd = -1;
    VSHMEM_RETURN_IF_ERROR(drv.check(
        drv.cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        call));
    return ShareableHandle::from_fd(fd);
  }
  if (kind == HandleKind::kFabric) {
    CUmemFabricHandle fabric = {};
    VSHMEM_RETURN_IF_ERROR(drv.check(
        drv.cuMemExportToShareableHandle(&fabric, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0), call));
    return ShareableHandle::from_fabric(fabric.data);
  }
  return error(Code::kInvalidArgument, call + ": not a handle kind that can be exported");
}

// The caller keeps `handle` (a descriptor is not consumed: the driver takes its own reference).
Result<CUmemGenericAllocationHandle> import_generic(const CudaDriver& drv,
                                                    const ShareableHandle& handle,
                                                    const std::string& what) {
  const std::string call = log::format("cuMemImportFromShareableHandle(%s, %s)",
                                       handle_kind_name(handle.kind()), what.c_str());
  CUmemGenericAllocationHandle imported = 0;
  if (handle.kind() == HandleKind::kPosixFd) {
    if (handle.fd() < 0) return error(Code::kInvalidArgument, call + ": no descriptor");
    VSHMEM_RETURN_IF_ERROR(
        drv.check(drv.cuMemImportFromShareableHandle(
                      &imported, reinterpret_cast<void*>(static_cast<uintptr_t>(handle.fd())),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  call));
  } else if (handle.kind() == HandleKind::kFabric) {
    CUmemFabricHandle fabric = {};
    std::memcpy(fabric.data, handle.fabric().data(), sizeof(fabric.data));
    VSHMEM_RETURN_IF_ERROR(drv.check(
        drv.cuMemImportFromShareableHandle(&imported, &fabric, CU_MEM_HANDLE_TYPE_FABRIC), call));
  } else {
    return error(Code::kInvalidArgument, call + ": empty handle");
  }
  return imported;
}

class CudaPhysical final : public PhysicalAllocation {
 public:
  CudaPhysical(std::shared_ptr<CudaDevice> device, CUmemGenericAllocationHandle handle, size_t size,
               bool imported)
      : device_(std::move(device)), handle_(handle), size_(size), imported_(imported) {}
  ~CudaPhysical() override {
    ScopedContext scope(*device_);
    CUresult r = device_->driver().cuMemRelease(handle_);
    if (r != CUDA_SUCCESS) {
      VSHMEM_WARN("cuMemRelease(%zu bytes): %s", size_, device_->driver().describe(r).c_str());
    }
  }
  size_t size() const override { return size_; }
  CUmemGenericAllocationHandle handle() const { return handle_; }
  bool imported() const { return imported_; }

  Result<ShareableHandle> export_handle(HandleKind kind) override {
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    return export_generic(device_->driver(), handle_, kind, log::format("%zu bytes", size_));
  }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUmemGenericAllocationHandle handle_;
  size_t size_;
  bool imported_;
};

// A BufferKind allocation; it holds the device (and with it the primary context) until freed.
class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(std::shared_ptr<CudaDevice> device, BufferKind kind, void* address, size_t size)
      : Buffer(address, size), device_(std::move(device)), kind_(kind) {}
  ~CudaBuffer() override {
    ScopedContext scope(*device_);
    const CudaDriver& drv = device_->driver();
    const CUresult r = kind_ == BufferKind::kDevice
                           ? drv.cuMemFree(reinterpret_cast<CUdeviceptr>(address()))
                           : drv.cuMemFreeHost(address());
    if (r != CUDA_SUCCESS) {
      VSHMEM_WARN("freeing %zu bytes of %s: %s", size(), buffer_kind_name(kind_),
                  drv.describe(r).c_str());
    }
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

 private:
  std::shared_ptr<CudaDevice> device_;
  BufferKind kind_;
};

class CudaReservation final : public VirtualReservation {
 public:
  CudaReservation(std::shared_ptr<CudaDevice> device, uintptr_t base, size_t size)
      : VirtualReservation(base, size), device_(std::move(device)) {}
  ~CudaReservation() override {
    ScopedContext scope(*device_);
    CUresult r = device_->driver().cuMemAddressFree(base(), size());
    if (r != CUDA_SUCCESS) {
      VSHMEM_WARN("cuMemAddressFree(0x%zx, %zu bytes): %s", static_cast<size_t>(base()), size(),
                  device_->driver().describe(r).c_str());
    }
  }

 private:
  std::shared_ptr<CudaDevice> device_;
};

class CudaMapping final : public Mapping {
 public:
  CudaMapping(std::shared_ptr<CudaDevice> device, std::shared_ptr<VirtualReservation> reservation,
              size_t offset, std::shared_ptr<PhysicalAllocation> physical)
      : Mapping(std::move(reservation), offset, std::move(physical)), device_(std::move(device)) {}
  // Runs before ~Mapping drops the references to the physical allocation and the reservation.
  ~CudaMapping() override {
    const uintptr_t va = reinterpret_cast<uintptr_t>(address());
    device_->remove_range(va);
    ScopedContext scope(*device_);
    CUresult r = device_->driver().cuMemUnmap(va, size());
    if (r != CUDA_SUCCESS) {
      VSHMEM_WARN("cuMemUnmap(0x%zx, %zu bytes): %s", static_cast<size_t>(va), size(),
                  device_->driver().describe(r).c_str());
    }
  }

 private:
  std::shared_ptr<CudaDevice> device_;
};

// VSHMEM_ENABLE_MULTICAST=1, read where cuMulticastCreate is called as well as by the runtime:
// a second lock on the one call that can take a shared host's GPUs out of service.
Status multicast_enabled() {
  auto on = env::bool_var("VSHMEM_ENABLE_MULTICAST", false);
  if (!on) return on.status();
  if (!on.value()) {
    return error(Code::kUnsupported,
                 "VSHMEM_ENABLE_MULTICAST is not set to 1 (multicast is opt-in: see README)");
  }
  return Status::ok();
}

class CudaMulticastObject final : public MulticastObject {
 public:
  CudaMulticastObject(std::shared_ptr<CudaDevice> device, CUmemGenericAllocationHandle handle,
                      size_t size, size_t granularity)
      : device_(std::move(device)), handle_(handle), size_(size), granularity_(granularity) {}
  ~CudaMulticastObject() override {
    const CudaDriver& drv = device_->driver();
    ScopedContext scope(*device_);
    if (va_ != 0) {
      if (mapped_) warn(drv.cuMemUnmap(va_, size_), "cuMemUnmap(multicast)");
      warn(drv.cuMemAddressFree(va_, size_), "cuMemAddressFree(multicast)");
    }
    for (const auto& [offset, physical] : bound_) {
      warn(drv.cuMulticastUnbind(handle_, device_->device(), offset, physical->size()),
           "cuMulticastUnbind");
    }
    warn(drv.cuMemRelease(handle_), "cuMemRelease(multicast)");
  }
  size_t size() const override { return size_; }

  Result<ShareableHandle> export_handle(HandleKind kind) override {
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    return export_generic(device_->driver(), handle_, kind, "multicast object");
  }

  Status add_device() override {
    const CudaDriver& drv = device_->driver();
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    return drv.check(drv.cuMulticastAddDevice(handle_, device_->device()),
                     log::format("cuMulticastAddDevice(device %d)", device_->ordinal()));
  }

  Status bind(size_t offset, std::shared_ptr<PhysicalAllocation> physical) override;

  Result<uintptr_t> map() override {
    const CudaDriver& drv = device_->driver();
    if (va_ != 0) return error(Code::kState, "multicast object: mapped already");
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUdeviceptr va = 0;
    VSHMEM_RETURN_IF_ERROR(
        drv.check(drv.cuMemAddressReserve(&va, size_, granularity_, 0, 0),
                  log::format("cuMemAddressReserve(%zu bytes for the multicast object)", size_)));
    va_ = va;  // freed by the destructor from here on
    VSHMEM_RETURN_IF_ERROR(drv.check(drv.cuMemMap(va_, size_, 0, handle_, 0),
                                     log::format("cuMemMap(multicast object, %zu bytes)", size_)));
    mapped_ = true;
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device_->ordinal();
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    VSHMEM_RETURN_IF_ERROR(drv.check(
        drv.cuMemSetAccess(va_, size_, &desc, 1),
        log::format("cuMemSetAccess(multicast object, device %d read/write)", device_->ordinal())));
    return static_cast<uintptr_t>(va_);
  }

 private:
  void warn(CUresult r, const char* call) const {
    if (r != CUDA_SUCCESS) VSHMEM_WARN("%s: %s", call, device_->driver().describe(r).c_str());
  }

  std::shared_ptr<CudaDevice> device_;
  CUmemGenericAllocationHandle handle_;
  size_t size_;
  size_t granularity_;
  CUdeviceptr va_ = 0;
  bool mapped_ = false;
  // Bound memory stays alive until it is unbound.
  std::map<size_t, std::shared_ptr<PhysicalAllocation>> bound_;
};

Status CudaMulticastObject::bind(size_t offset, std::shared_ptr<PhysicalAllocation> physical) {
  const CudaDriver& drv = device_->driver();
  auto* phys = dynamic_cast<CudaPhysical*>(physical.get());
  if (phys == nullptr) {
    return error(Code::kInvalidArgument, "cuMulticastBindMem: not memory of a cuda provider");
  }
  const std::string call = log::format("cuMulticastBindMem(offset %zu, %zu bytes, device %d)",
                                       offset, phys->size(), device_->ordinal());
  if (offset % granularity_ != 0 || phys->size() % granularity_ != 0 || offset > size_ ||
      phys->size() > size_ - offset) {
    return error(Code::kInvalidArgument,
                 call + log::format(": not inside the %zu-byte object or not a multiple of its "
                                    "granularity %zu",
                                    size_, granularity_));
  }
  ScopedContext scope(*device_);
  VSHMEM_RETURN_IF_ERROR(scope.status());
  VSHMEM_RETURN_IF_ERROR(
      drv.check(drv.cuMulticastBindMem(handle_, offset, phys->handle(), 0, phys->size(), 0), call));
  bound_[offset] = std::move(physical);
  return Status::ok();
}

class CudaMulticast final : public MulticastSupport {
 public:
  CudaMulticast(std::shared_ptr<CudaDevice> device, bool attribute)
      : device_(std::move(device)), attribute_(attribute) {}

  Status usable() const override {
    const CudaDriver& drv = device_->driver();
    if (!attribute_) {
      return error(Code::kUnsupported,
                   log::format("device %d does not report CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED",
                               device_->ordinal()));
    }
    if (drv.cuMulticastCreate == nullptr || drv.cuMulticastGetGranularity == nullptr ||
        drv.cuMulticastAddDevice == nullptr || drv.cuMulticastBindMem == nullptr ||
        drv.cuMulticastUnbind == nullptr) {
      return error(Code::kUnsupported,
                   log::format("the CUDA driver (%s) has no cuMulticast* entry points (12.1+)",
                               driver_version_string(drv.version).c_str()));
    }
    return Status::ok();
  }

  Result<size_t> granularity(size_t size, int n_devices) override {
    VSHMEM_RETURN_IF_ERROR(usable());
    const CudaDriver& drv = device_->driver();
    CUmulticastObjectProp prop = properties(size, n_devices, HandleKind::kNone);
    size_t gran = 0;
    VSHMEM_RETURN_IF_ERROR(
        drv.check(drv.cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
                  log::format("cuMulticastGetGranularity(%d devices, minimum)", n_devices)));
    if (gran == 0) return error(Code::kSystem, "cuMulticastGetGranularity: granularity 0");
    return gran;
  }

  Result<std::unique_ptr<MulticastObject>> create(size_t size, int n_devices,
                                                  HandleKind kind) override {
    VSHMEM_RETURN_IF_ERROR(usable());
    VSHMEM_RETURN_IF_ERROR(multicast_enabled());  // checked again right before the call
    VSHMEM_ASSIGN_OR_RETURN(size_t gran, granularity(size, n_devices));
    if (size == 0 || size % gran != 0) {
      return error(Code::kInvalidArgument,
                   log::format("cuMulticastCreate(%zu bytes): not a multiple of the multicast "
                               "granularity %zu",
                               size, gran));
    }
    const CudaDriver& drv = device_->driver();
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUmulticastObjectProp prop = properties(size, n_devices, kind);
    CUmemGenericAllocationHandle handle = 0;
    VSHMEM_RETURN_IF_ERROR(drv.check(drv.cuMulticastCreate(&handle, &prop),
                                     log::format("cuMulticastCreate(%zu bytes, %d devices, %s)",
                                                 size, n_devices, handle_kind_name(kind))));
    return std::unique_ptr<MulticastObject>(
        std::make_unique<CudaMulticastObject>(device_, handle, size, gran));
  }

  Result<std::unique_ptr<MulticastObject>> import(ShareableHandle handle, size_t size) override {
    VSHMEM_RETURN_IF_ERROR(usable());
    const CudaDriver& drv = device_->driver();
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUmemGenericAllocationHandle imported = 0;
    VSHMEM_ASSIGN_OR_RETURN(imported, import_generic(drv, handle, "multicast object"));
    // The granularity this object checks bindings against. The importer does not know the
    // creator's device count, so it asks for one device; the multicast region has already
    // checked every chunk against the granularity for all devices (the largest any PE got),
    // and the driver checks each binding itself.
    CUmulticastObjectProp prop = properties(size, 1, HandleKind::kNone);
    size_t gran = 0;
    CUresult r = drv.cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS || gran == 0) {
      drv.cuMemRelease(imported);
      return drv.check(r == CUDA_SUCCESS ? CUDA_ERROR_UNKNOWN : r, "cuMulticastGetGranularity");
    }
    return std::unique_ptr<MulticastObject>(
        std::make_unique<CudaMulticastObject>(device_, imported, size, gran));
  }

 private:
  static CUmulticastObjectProp properties(size_t size, int n_devices, HandleKind kind) {
    CUmulticastObjectProp prop = {};
    prop.numDevices = static_cast<unsigned>(n_devices);
    prop.size = size;
    prop.handleTypes = cu_handle_type(kind);
    return prop;
  }

  std::shared_ptr<CudaDevice> device_;
  bool attribute_;
};

class CudaProvider final : public MemoryProvider {
 public:
  CudaProvider(std::shared_ptr<CudaDevice> device, CudaNodeCaps caps)
      : device_(std::move(device)),
        caps_(std::move(caps)),
        drv_(device_->driver()),
        multicast_(device_, caps_.devices[device_->ordinal()].multicast) {}

  ~CudaProvider() override {
    ScopedContext scope(*device_);
    if (mailbox_ != nullptr && log::enabled(log::Level::kInfo)) {
      const InboundMailbox::Times t = mailbox_->times();
      const uint64_t n = std::max<uint64_t>(t.atomics + t.copies, 1);
      VSHMEM_INFO(
          "inbound mailbox on device %d: %llu requests (%llu atomics, %llu copies of %llu bytes), "
          "%llu of them performed by waiting kernels, %llu one-thread kernels launched; posted to "
          "done: mean %.2f us, max %.1f us",
          device_->ordinal(), static_cast<unsigned long long>(mailbox_->requests()),
          static_cast<unsigned long long>(t.atomics), static_cast<unsigned long long>(t.copies),
          static_cast<unsigned long long>(t.copy_bytes),
          static_cast<unsigned long long>(mailbox_->served_waiting()),
          static_cast<unsigned long long>(mailbox_->launches()),
          static_cast<double>(t.total_ns) / 1e3 / static_cast<double>(n),
          static_cast<double>(t.max_ns) / 1e3);
    }
    // A fallback kernel still queued names the mailbox: it runs before the memory goes.
    if (mailbox_stream_ != nullptr) drv_.cuStreamSynchronize(mailbox_stream_);
    mailbox_.reset();
    mailbox_claim_.reset();
    mailbox_box_.reset();
    mailbox_bounce_.reset();
    if (mailbox_stream_ != nullptr) drv_.cuStreamDestroy(mailbox_stream_);
    if (result_buf_ != 0) drv_.cuMemFree(result_buf_);
    if (module_ != nullptr) drv_.cuModuleUnload(module_);
    if (stream_ != nullptr) drv_.cuStreamDestroy(stream_);
    for (CUstream s : started_streams_) drv_.cuStreamDestroy(s);
  }

  // Chooses the allocation properties and handle kinds, probing with one real allocation, and
  // loads the atomic kernels. Called once, before the provider is handed out.
  Status init(HandleTypeChoice choice, bool want_compression) {
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    const CudaDeviceCaps& dc = caps_.devices[device_->ordinal()];

    std::vector<HandleKind> candidates;
    if (choice == HandleTypeChoice::kFabric) {
      if (!dc.fabric) {
        return error(Code::kUnsupported,
                     log::format("VSHMEM_HANDLE_TYPE=fabric: device %d does not support fabric "
                                 "handles (driver %s, needs %s and "
                                 "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)",
                                 dc.ordinal, driver_version_string(drv_.version).c_str(),
                                 driver_version_string(kMinFabricDriverVersion).c_str()));
      }
      if (Status imex = check_imex_channel(imex_dir()); !imex.is_ok()) {
        return error(Code::kUnsupported, "VSHMEM_HANDLE_TYPE=fabric: " + imex.message());
      }
      candidates = {HandleKind::kFabric};
    } else if (choice == HandleTypeChoice::kPosixFd) {
      if (!dc.posix_fd) {
        return error(Code::kUnsupported,
                     log::format("VSHMEM_HANDLE_TYPE=posix_fd: device %d does not support POSIX "
                                 "file descriptor handles",
                                 dc.ordinal));
      }
      candidates = {HandleKind::kPosixFd};
    } else {
      if (dc.fabric) {
        // The channel is checked first, so that its absence is named rather than guessed from
        // a failing export.
        if (Status imex = check_imex_channel(imex_dir()); imex.is_ok()) {
          candidates.push_back(HandleKind::kFabric);
        } else {
          VSHMEM_INFO("fabric handles not offered on device %d: %s", dc.ordinal,
                      imex.message().c_str());
        }
      }
      if (dc.posix_fd) candidates.push_back(HandleKind::kPosixFd);
    }

    prop_ = {};
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = dc.ordinal;
    // Lets a future network transport register the chunks; costs nothing where supported.
    prop_.allocFlags.gpuDirectRDMACapable = dc.gdr_with_vmm ? 1 : 0;
    if (want_compression) {
      if (dc.compression) {
        prop_.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
      } else {
        VSHMEM_INFO(
            "VSHMEM_COMPRESSIBLE=1 but device %d does not support compression: plain "
            "memory",
            dc.ordinal);
      }
    }

    // Probe: the attributes say what the device can do; whether this process can (an IMEX
    // channel for fabric handles, compressible or RDMA-capable memory here) only real
    // allocations and exports tell. First the memory flags, then each handle kind on its own,
    // then the kinds together.
    for (;;) {
      prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
      Status st = probe({});
      if (st.is_ok()) break;
      if (prop_.allocFlags.compressionType != 0) {
        VSHMEM_INFO("compressible memory unusable on device %d (%s): plain memory", dc.ordinal,
                    st.message().c_str());
        prop_.allocFlags.compressionType = 0;
        continue;
      }
      if (prop_.allocFlags.gpuDirectRDMACapable != 0) {
        VSHMEM_INFO("GPUDirect RDMA capable memory unusable on device %d (%s): plain memory",
                    dc.ordinal, st.message().c_str());
        prop_.allocFlags.gpuDirectRDMACapable = 0;
        continue;
      }
      return st.with_context(log::format("probing allocation on device %d: ", dc.ordinal));
    }
    std::vector<HandleKind> usable;
    for (HandleKind k : candidates) {
      prop_.requestedHandleTypes = cu_handle_type(k);
      Status st = probe({k});
      if (st.is_ok()) {
        usable.push_back(k);
        continue;
      }
      if (choice == HandleTypeChoice::kFabric) {
        return error(Code::kUnsupported,
                     "VSHMEM_HANDLE_TYPE=fabric: fabric handles are not usable (" + st.message() +
                         "); is an IMEX channel (/dev/nvidia-caps-imex-channels) available?");
      }
      if (choice == HandleTypeChoice::kPosixFd) {
        return error(Code::kUnsupported,
                     "VSHMEM_HANDLE_TYPE=posix_fd: POSIX file descriptor handles are not usable "
                     "(" +
                         st.message() + ")");
      }
      VSHMEM_INFO("%s handles unusable on device %d (%s%s): not offered", handle_kind_name(k),
                  dc.ordinal, st.message().c_str(),
                  k == HandleKind::kFabric ? "; no IMEX channel?" : "");
    }
    prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    for (HandleKind k : usable) {
      prop_.requestedHandleTypes =
          static_cast<CUmemAllocationHandleType>(prop_.requestedHandleTypes | cu_handle_type(k));
    }
    if (usable.size() > 1) {
      if (Status st = probe(usable); !st.is_ok()) {
        VSHMEM_INFO("device %d cannot offer %s and %s handles on one allocation (%s): only %s",
                    dc.ordinal, handle_kind_name(usable[0]), handle_kind_name(usable[1]),
                    st.message().c_str(), handle_kind_name(usable[0]));
        usable.resize(1);
        prop_.requestedHandleTypes = cu_handle_type(usable[0]);
      }
    }
    kinds_ = usable;

    VSHMEM_RETURN_IF_ERROR(drv_.check(
        drv_.cuMemGetAllocationGranularity(&granularity_, &prop_,
                                           CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        log::format("cuMemGetAllocationGranularity(device %d, recommended)", dc.ordinal)));
    size_t minimum = 0;
    VSHMEM_RETURN_IF_ERROR(drv_.check(
        drv_.cuMemGetAllocationGranularity(&minimum, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        log::format("cuMemGetAllocationGranularity(device %d, minimum)", dc.ordinal)));
    if (minimum == 0 || granularity_ == 0 || granularity_ % minimum != 0) {
      return error(Code::kSystem, log::format("device %d: granularity recommended=%zu is not a "
                                              "multiple of minimum=%zu",
                                              dc.ordinal, granularity_, minimum));
    }
    minimum_ = minimum;

    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuModuleLoadData(&module_, atomic_ptx()),
                                      "cuModuleLoadData(host atomic kernels)"));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuModuleGetFunction(&atomic_b32_, module_, "vshmem_atomic_b32"),
                   "cuModuleGetFunction(vshmem_atomic_b32)"));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuModuleGetFunction(&atomic_b64_, module_, "vshmem_atomic_b64"),
                   "cuModuleGetFunction(vshmem_atomic_b64)"));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuModuleGetFunction(&mailbox_fn_, module_, "vshmem_mailbox_serve"),
                   "cuModuleGetFunction(vshmem_mailbox_serve)"));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemAlloc(&result_buf_, sizeof(uint64_t)), "cuMemAlloc(8 bytes)"));

    std::string kinds;
    for (HandleKind k : kinds_)
      kinds += std::string(kinds.empty() ? "" : ",") + handle_kind_name(k);
    VSHMEM_INFO(
        "cuda provider on device %d (%s): handle types [%s], granularity %zu "
        "(minimum %zu), compressible=%d, gpudirect_rdma=%d",
        dc.ordinal, dc.name.c_str(), kinds.empty() ? "none: not shareable" : kinds.c_str(),
        granularity_, minimum, prop_.allocFlags.compressionType != 0,
        prop_.allocFlags.gpuDirectRDMACapable != 0);
    return Status::ok();
  }

  // The device's PCI location (domain, bus, device), which names the same GPU in every process
  // whatever CUDA_VISIBLE_DEVICES says there.
  uint64_t locality_token() const override { return pci_token(device_->ordinal()); }
  int device_ordinal() const override { return device_->ordinal(); }

  Status device_fault() const override {
    if (stream_ == nullptr) return Status::ok();
    ScopedContext scope(*device_);
    if (!scope.status()) return Status::ok();  // says nothing about the device's health
    // Our own stream is idle or busy with a copy: any answer but success or "not ready" is the
    // context's sticky error, which every call returns once a kernel has faulted. (The scope's
    // relaxed capture mode lets the query run during an application's graph capture.)
    const CUresult r = drv_.cuStreamQuery(stream_);
    switch (r) {
      case CUDA_ERROR_ASSERT:
      case CUDA_ERROR_HARDWARE_STACK_ERROR:
      case CUDA_ERROR_ILLEGAL_INSTRUCTION:
      case CUDA_ERROR_MISALIGNED_ADDRESS:
      case CUDA_ERROR_INVALID_ADDRESS_SPACE:
      case CUDA_ERROR_INVALID_PC:
      case CUDA_ERROR_LAUNCH_FAILED:
      case CUDA_ERROR_ILLEGAL_ADDRESS:
      case CUDA_ERROR_ECC_UNCORRECTABLE:
        return error(Code::kSystem,
                     log::format("GPU %d: %s", device_->ordinal(), drv_.describe(r).c_str()));
      default: return Status::ok();
    }
  }
  Result<LoadedGlobal> loaded_global(const void* code, bool library, const char* name) override {
    ScopedContext scope(*device_);  // a library's globals are per context: ours
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUdeviceptr address = 0;
    size_t bytes = 0;
    const CUresult r =
        library ? drv_.cuLibraryGetGlobal(&address, &bytes,
                                          static_cast<CUlibrary>(const_cast<void*>(code)), name)
                : drv_.cuModuleGetGlobal(&address, &bytes,
                                         static_cast<CUmodule>(const_cast<void*>(code)), name);
    if (r == CUDA_ERROR_NOT_FOUND) {
      return error(Code::kInvalidArgument,
                   log::format("the %s does not define %s", library ? "library" : "module", name));
    }
    VSHMEM_RETURN_IF_ERROR(drv_.check(
        r, log::format("%s(%s)", library ? "cuLibraryGetGlobal" : "cuModuleGetGlobal", name)));
    return LoadedGlobal{reinterpret_cast<void*>(address), bytes};
  }
  bool mps_enabled() const override {
    int v = 0;
    return drv_.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, device_->device()) ==
               CUDA_SUCCESS &&
           v != 0;
  }
  uint64_t memory_capacity() const override {
    ScopedContext scope(*device_);
    size_t free_bytes = 0, total_bytes = 0;
    if (!scope.status() || drv_.cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS) return 0;
    return total_bytes;
  }

  // A peer's memory can be mapped here when its GPU is ours, or one of our visible devices that
  // our device can access (cuDeviceCanAccessPeer, directional: the transport layer also asks
  // the peer about us).
  bool can_map_peer(uint64_t peer_token) const override {
    const int own = device_->ordinal();
    for (int d = 0; d < static_cast<int>(caps_.devices.size()); ++d) {
      if (pci_token(d) == peer_token) return d == own || caps_.can_access_peer[own][d];
    }
    return false;  // a GPU this process cannot see
  }

  MulticastSupport* multicast() override { return &multicast_; }

  FabricIdentity fabric_identity() const override {
    FabricIdentity id;
    if (std::find(kinds_.begin(), kinds_.end(), HandleKind::kFabric) == kinds_.end() ||
        drv_.fabric_info == nullptr) {
      return id;
    }
    CudaFabricInfo info;
    CUresult r = drv_.fabric_info(device_->ordinal(), &info);
    if (r != CUDA_SUCCESS || !info.registered) {
      VSHMEM_INFO("device %d: no NVLink fabric domain (%s)", device_->ordinal(),
                  r != CUDA_SUCCESS ? drv_.describe(r).c_str() : "fabric registration incomplete");
      return id;
    }
    id.usable = 1;
    id.clique_id = info.clique_id;
    std::memcpy(id.cluster_uuid, info.cluster_uuid, sizeof(id.cluster_uuid));
    return id;
  }
  const char* name() const override { return "cuda"; }
  bool is_device_memory() const override { return true; }
  size_t granularity() const override { return granularity_; }
  std::vector<HandleKind> handle_kinds() const override { return kinds_; }

  Result<uintptr_t> find_free_range(size_t size, size_t alignment) override {
    VSHMEM_RETURN_IF_ERROR(check_size("find_free_range", size));
    if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
      return error(Code::kInvalidArgument,
                   log::format("find_free_range(%zu, alignment %zu): alignment is not a power of "
                               "two",
                               size, alignment));
    }
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUdeviceptr ptr = 0;
    const size_t align = std::max(alignment, granularity_);
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemAddressReserve(&ptr, size, align, 0, 0),
                   log::format("find_free_range: cuMemAddressReserve(%zu bytes, alignment %zu)",
                               size, align)));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemAddressFree(ptr, size), "find_free_range: cuMemAddressFree"));
    return static_cast<uintptr_t>(ptr);
  }

  Result<std::shared_ptr<VirtualReservation>> reserve(uintptr_t addr, size_t size) override {
    VSHMEM_RETURN_IF_ERROR(check_size("reserve", size));
    if (addr == 0 || addr % granularity_ != 0) {
      return error(Code::kInvalidArgument,
                   log::format("reserve(0x%zx, %zu): the address is not a non-zero multiple of "
                               "the granularity %zu",
                               static_cast<size_t>(addr), size, granularity_));
    }
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUdeviceptr ptr = 0;
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemAddressReserve(&ptr, size, 0, static_cast<CUdeviceptr>(addr), 0),
                   log::format("reserve: cuMemAddressReserve(0x%zx, %zu bytes)",
                               static_cast<size_t>(addr), size)));
    if (ptr != addr) {
      // The hint is only a hint: the driver placed the range elsewhere because part of
      // [addr, addr + size) is taken.
      drv_.cuMemAddressFree(ptr, size);
      return error(Code::kUnsupported,
                   log::format("reserve: cuMemAddressReserve(0x%zx, %zu bytes) returned 0x%zx: "
                               "the range is not free in this process",
                               static_cast<size_t>(addr), size, static_cast<size_t>(ptr)));
    }
    return std::shared_ptr<VirtualReservation>(
        std::make_shared<CudaReservation>(device_, addr, size));
  }

  Result<std::shared_ptr<PhysicalAllocation>> create(size_t size) override {
    VSHMEM_RETURN_IF_ERROR(check_size("create", size));
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUmemGenericAllocationHandle handle = 0;
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemCreate(&handle, size, &prop_, 0),
                   log::format("cuMemCreate(%zu bytes, device %d)", size, device_->ordinal())));
    return std::shared_ptr<PhysicalAllocation>(
        std::make_shared<CudaPhysical>(device_, handle, size, false));
  }

  Result<std::shared_ptr<PhysicalAllocation>> import(ShareableHandle handle, size_t size) override {
    VSHMEM_RETURN_IF_ERROR(check_size("import", size));
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    CUmemGenericAllocationHandle imported = 0;
    VSHMEM_ASSIGN_OR_RETURN(imported, import_generic(drv_, handle, log::format("%zu bytes", size)));
    return std::shared_ptr<PhysicalAllocation>(
        std::make_shared<CudaPhysical>(device_, imported, size, true));
  }

  Result<std::unique_ptr<Mapping>> map(std::shared_ptr<VirtualReservation> reservation,
                                       size_t offset,
                                       std::shared_ptr<PhysicalAllocation> physical) override {
    auto* phys = dynamic_cast<CudaPhysical*>(physical.get());
    if (reservation == nullptr || phys == nullptr ||
        dynamic_cast<CudaReservation*>(reservation.get()) == nullptr) {
      return error(Code::kInvalidArgument,
                   "map: the reservation and the allocation must both come from a cuda provider");
    }
    const size_t size = phys->size();
    if (offset % minimum_ != 0 || offset > reservation->size() ||
        size > reservation->size() - offset) {
      return error(Code::kInvalidArgument,
                   log::format("map(offset %zu, %zu bytes): outside the %zu-byte reservation or "
                               "not a multiple of the granularity %zu",
                               offset, size, reservation->size(), minimum_));
    }
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    const CUdeviceptr va = reservation->base() + offset;
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemMap(va, size, 0, phys->handle(), 0),
                   log::format("cuMemMap(0x%zx, %zu bytes)", static_cast<size_t>(va), size)));
    // From here the mapping object owns the unmap, also on the error path below.
    auto mapping =
        std::make_unique<CudaMapping>(device_, std::move(reservation), offset, std::move(physical));
    VSHMEM_RETURN_IF_ERROR(set_access(va, *phys));
    // Synchronous CUDA memory calls on this range (cudaMemcpy, cudaMemset) complete before they
    // return, as NVSHMEM's heap does: without it a cudaMemcpy of up to 64 KiB from pageable
    // memory returns once the data is staged, and a peer reading after the next barrier can see
    // the old contents. Drivers before 12.1 refuse it for VMM memory: then only async ordering.
    const int sync_memops = 1;
    CUresult sr = drv_.cuPointerSetAttribute(&sync_memops, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, va);
    if (sr != CUDA_SUCCESS && !sync_memops_warned_) {
      sync_memops_warned_ = true;
      VSHMEM_INFO(
          "cuPointerSetAttribute(SYNC_MEMOPS, 0x%zx): %s: synchronous cudaMemcpy to the "
          "heap may return before the copy lands; synchronize before a barrier",
          static_cast<size_t>(va), drv_.describe(sr).c_str());
    }
    device_->add_range(va, size);
    return std::unique_ptr<Mapping>(std::move(mapping));
  }

  // Walks [address, address + size) one minimum granule at a time: each run of granules showing
  // the same allocation (cuMemRetainAllocationHandle) is one piece. A mapping always starts at
  // its allocation's first byte (cuMemMap takes offset 0 only), so a run that starts after
  // another run starts its allocation; the first and the last run are checked at their outer
  // edges.
  Result<std::vector<std::shared_ptr<PhysicalAllocation>>> retain_mapped(void* address, size_t size,
                                                                         HandleKind kind) override {
    const uintptr_t a = reinterpret_cast<uintptr_t>(address);
    if (a == 0 || size == 0) {
      return error(Code::kInvalidArgument,
                   log::format("%p, %zu bytes: nothing to register", address, size));
    }
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    std::vector<std::shared_ptr<PhysicalAllocation>> pieces;
    // Every probe takes a reference; `probes` drops them all when this call returns.
    std::vector<std::unique_ptr<CudaPhysical>> probes;
    auto probe_at = [&](uintptr_t at) -> CUmemGenericAllocationHandle {
      CUmemGenericAllocationHandle h = 0;
      if (drv_.cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(at)) != CUDA_SUCCESS) {
        return 0;
      }
      probes.push_back(std::make_unique<CudaPhysical>(device_, h, minimum_, false));
      return h;
    };
    auto not_vmm = [&](size_t off) {
      return error(Code::kUnsupported,
                   log::format("%p (%zu bytes into the buffer) is not memory mapped with "
                               "cuMemCreate/cuMemMap (cudaMalloc, cudaMallocAsync, managed and "
                               "host memory cannot be shared by handle: allocate with the VMM "
                               "API, e.g. PyTorch's expandable_segments, or use shmem_malloc)",
                               reinterpret_cast<void*>(a + off), off));
    };
    if (probe_at(a) == 0) return not_vmm(0);
    if (a % minimum_ != 0 || size % minimum_ != 0) {
      return error(Code::kInvalidArgument,
                   log::format("%p, %zu bytes: the address and the size must be multiples of the "
                               "allocation granularity %zu (whole cuMemCreate allocations)",
                               address, size, minimum_));
    }
    if (a >= minimum_) {
      CUmemGenericAllocationHandle before = probe_at(a - minimum_);
      if (before != 0 && before == probe_at(a)) {
        return error(Code::kInvalidArgument,
                     log::format("%p is inside an allocation, not at its start: register whole "
                                 "cuMemCreate allocations",
                                 address));
      }
    }
    size_t off = 0;
    while (off < size) {
      CUmemGenericAllocationHandle h = probe_at(a + off);
      if (h == 0) return not_vmm(off);
      size_t len = minimum_;
      while (off + len < size && probe_at(a + off + len) == h) len += minimum_;
      CUmemAllocationProp props = {};
      VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuMemGetAllocationPropertiesFromHandle(&props, h),
                                        "cuMemGetAllocationPropertiesFromHandle"));
      if (props.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
          props.location.id != device_->ordinal()) {
        return error(Code::kUnsupported,
                     log::format("%p: the allocation is not memory of this PE's device %d",
                                 reinterpret_cast<void*>(a + off), device_->ordinal()));
      }
      if ((props.requestedHandleTypes & cu_handle_type(kind)) == 0) {
        return error(Code::kUnsupported,
                     log::format("%p: the allocation was made without the %s handle type that "
                                 "this job shares memory with (cuMemCreate's "
                                 "prop.requestedHandleTypes)",
                                 reinterpret_cast<void*>(a + off), handle_kind_name(kind)));
      }
      // The piece keeps one reference of its own.
      CUmemGenericAllocationHandle kept = 0;
      VSHMEM_RETURN_IF_ERROR(
          drv_.check(drv_.cuMemRetainAllocationHandle(&kept, reinterpret_cast<void*>(a + off)),
                     "cuMemRetainAllocationHandle"));
      pieces.push_back(std::make_shared<CudaPhysical>(device_, kept, len, false));
      off += len;
    }
    const CUmemGenericAllocationHandle last =
        static_cast<const CudaPhysical&>(*pieces.back()).handle();
    if (probe_at(a + size) == last) {
      return error(Code::kInvalidArgument,
                   log::format("%p, %zu bytes: the buffer ends inside an allocation: register "
                               "whole cuMemCreate allocations",
                               address, size));
    }
    return pieces;
  }

  Status copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr || src == nullptr) {
      return error(Code::kInvalidArgument, "copy: null address");
    }
    const stall::Scope watched("cuda provider: copy", bytes);
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    // A small copy between host buffers needs no GPU: a device call to a remote PE copies its
    // inline data into the remote path's page-locked bounce buffer, and a get's answer back into
    // the request ring, where a stream copy and its synchronization cost microseconds each.
    if (bytes <= kHostCopyMax && host_memory(dst) && host_memory(src)) {
      std::memmove(dst, src, bytes);
      return Status::ok();
    }
    // Our own non-blocking stream: the legacy default stream would serialize with the
    // application's kernels, which may be waiting for exactly this copy.
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                      reinterpret_cast<CUdeviceptr>(src), bytes, stream_),
                   log::format("copy: cuMemcpyAsync(%p <- %p, %zu bytes)", dst, src, bytes)));
    return drv_.check(drv_.cuStreamSynchronize(stream_), "copy: cuStreamSynchronize");
  }

  // Each started copy gets a stream of its own from a pool, so copies of both directions run at
  // once on the copy engines and a finished one is seen without waiting for later ones; the
  // ticket is the stream's index + 1 (0: nothing to wait for).
  Result<uint64_t> copy_start(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return uint64_t{0};
    if (dst == nullptr || src == nullptr) {
      return error(Code::kInvalidArgument, "copy_start: null address");
    }
    const stall::Scope watched("cuda provider: copy_start (stream creation, copy)", bytes);
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    // As copy(): two host buffers (a proxied call's inline data into a bounce buffer, a get's
    // answer out of one) are a CPU copy, finished at once.
    if (bytes <= kHostCopyMax && host_memory(dst) && host_memory(src)) {
      std::memmove(dst, src, bytes);
      return uint64_t{0};
    }
    // A small copy between this GPU and host memory: through the inbound mailbox, which a
    // waiting kernel of ours serves (a stream copy may sit in a hardware queue behind kernels
    // that wait for the very PE this copy serves, impl/proxy_mailbox.h). Finished at once.
    if (InboundMailbox* mailbox = mailbox_ready();
        mailbox != nullptr && bytes <= mailbox_copy_max_) {
      const bool to_device = this_device_memory(dst, bytes) && host_memory(src);
      if (to_device || (this_device_memory(src, bytes) && host_memory(dst))) {
        const stall::Scope mailbox_watched("cuda provider: copy (inbound mailbox)", bytes);
        VSHMEM_RETURN_IF_ERROR(mailbox->copy(dst, src, bytes, to_device));
        return uint64_t{0};
      }
    }
    size_t index = 0;
    CUstream stream = nullptr;
    {
      std::lock_guard<std::mutex> lock(started_mu_);
      if (started_free_.empty()) {
        VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                                          "copy_start: cuStreamCreate"));
        started_streams_.push_back(stream);
        started_at_.emplace_back();
        index = started_streams_.size() - 1;
      } else {
        index = started_free_.back();
        started_free_.pop_back();
        stream = started_streams_[index];
      }
    }
    const CUresult r = drv_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                          reinterpret_cast<CUdeviceptr>(src), bytes, stream);
    if (r != CUDA_SUCCESS) {
      std::lock_guard<std::mutex> lock(started_mu_);
      started_free_.push_back(index);
      return drv_.check(
          r, log::format("copy_start: cuMemcpyAsync(%p <- %p, %zu bytes)", dst, src, bytes));
    }
    {
      std::lock_guard<std::mutex> lock(started_mu_);
      started_at_[index] = StartedCopy{std::chrono::steady_clock::now(), bytes, false};
    }
    return static_cast<uint64_t>(index) + 1;
  }
  Result<bool> copy_test(uint64_t ticket) override {
    if (ticket == 0) return true;
    CUstream stream = nullptr;
    StartedCopy started;  // what copy_start recorded: read once, with the stream, per poll
    {
      std::lock_guard<std::mutex> lock(started_mu_);
      if (ticket > started_streams_.size()) {
        return error(Code::kInvalidArgument, log::format("copy_test: no copy %llu",
                                                         static_cast<unsigned long long>(ticket)));
      }
      stream = started_streams_[ticket - 1];
      started = started_at_[ticket - 1];
    }
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    const CUresult r = drv_.cuStreamQuery(stream);
    if (r == CUDA_ERROR_NOT_READY) {
      // A started copy is polled, not waited for, so the stall watch cannot see it: say once
      // when one is stuck (its stream may share a hardware queue with this process's kernels
      // that wait for a remote PE: README, shared hardware queues). The lock again only then.
      const double age =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started.since).count();
      if (started.warned || age <= 5.0) return false;
      std::lock_guard<std::mutex> lock(started_mu_);
      StartedCopy& c = started_at_[ticket - 1];
      if (!c.warned) {
        c.warned = true;
        VSHMEM_WARN(
            "cuda provider: a copy of %zu bytes started %.1f s ago has not completed (its stream "
            "may wait behind this process's kernels in a shared hardware queue)",
            c.bytes, age);
      }
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(started_mu_);
      started_free_.push_back(static_cast<size_t>(ticket - 1));
    }
    VSHMEM_RETURN_IF_ERROR(drv_.check(r, "copy_test: cuStreamQuery"));
    return true;
  }

  // Up to this size a copy whose ends are both host memory is a CPU copy (copy()); larger ones
  // go through the stream as before (the CPU would be slower than the copy engine).
  static constexpr size_t kHostCopyMax = 64 << 10;

  // Whether p is host memory the CPU may copy: not our heap, and neither GPU nor managed memory by
  // CUDA's answer (pageable memory CUDA does not know is host memory too). Needs the context.
  bool host_memory(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (device_->contains(a, 1)) return false;
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    const CUresult r = drv_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                  static_cast<CUdeviceptr>(a));
    if (r == CUDA_ERROR_INVALID_VALUE) return true;  // unknown to CUDA: pageable host memory
    if (r != CUDA_SUCCESS || type != CU_MEMORYTYPE_HOST) return false;
    // Managed memory says "host" where its pages are now; the copy engine handles it either way.
    int managed = 0;
    return drv_.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      static_cast<CUdeviceptr>(a)) == CUDA_SUCCESS &&
           managed == 0;
  }

  // Whether [p, p + bytes) is GPU memory that a kernel of this device reaches: our heap and window,
  // or a cuMemAlloc block of this device. Needs the context.
  bool this_device_memory(const void* p, size_t bytes) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (device_->contains(a, bytes)) return true;
    CUmemorytype type = CU_MEMORYTYPE_HOST;
    int ordinal = -1, managed = 1;
    const auto d = static_cast<CUdeviceptr>(a);
    return drv_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_DEVICE &&
           drv_.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d) ==
               CUDA_SUCCESS &&
           managed == 0 &&
           drv_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d) ==
               CUDA_SUCCESS &&
           ordinal == device_->ordinal();
  }

  // Page-locked and portable (every context may copy from it at full speed).
  Result<void*> alloc_staging(size_t bytes) override {
    const stall::Scope watched("cuda provider: staging allocation (cuMemHostAlloc)", bytes);
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    void* p = nullptr;
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE),
                   log::format("staging buffer: cuMemHostAlloc(%zu bytes)", bytes)));
    return p;
  }
  void free_staging(void* p) override {
    if (p == nullptr) return;
    ScopedContext scope(*device_);
    (void)drv_.cuMemFreeHost(p);
  }
  Status register_host(void* p, size_t bytes) override {
    const stall::Scope watched("cuda provider: host memory registration (cuMemHostRegister)",
                               bytes);
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    const CUresult r = drv_.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    if (r == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
      // Someone else in this process registered it (UCX's CUDA support registers host memory it
      // allocates): usable as it is, and not ours to unregister.
      std::lock_guard<std::mutex> lock(started_mu_);
      foreign_registered_.push_back(p);
      return Status::ok();
    }
    return drv_.check(r, log::format("cuMemHostRegister(%p, %zu bytes, PORTABLE)", p, bytes));
  }
  void unregister_host(void* p) override {
    if (p == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(started_mu_);
      auto it = std::find(foreign_registered_.begin(), foreign_registered_.end(), p);
      if (it != foreign_registered_.end()) {
        foreign_registered_.erase(it);
        return;
      }
    }
    ScopedContext scope(*device_);
    (void)drv_.cuMemHostUnregister(p);
  }

  Result<std::unique_ptr<Buffer>> allocate(BufferKind kind, size_t bytes) override {
    if (bytes == 0) return error(Code::kInvalidArgument, "allocate: 0 bytes");
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    const std::string what = log::format("%zu bytes of %s on device %d", bytes,
                                         buffer_kind_name(kind), device_->ordinal());
    if (kind == BufferKind::kDevice) {
      CUdeviceptr d = 0;
      VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuMemAlloc(&d, bytes), "cuMemAlloc(" + what + ")"));
      auto buffer = std::make_unique<CudaBuffer>(device_, kind, reinterpret_cast<void*>(d), bytes);
      VSHMEM_RETURN_IF_ERROR(fill(buffer->address(), 0, bytes));
      return std::unique_ptr<Buffer>(std::move(buffer));
    }
    void* p = nullptr;
    VSHMEM_RETURN_IF_ERROR(drv_.check(
        drv_.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc(" + what + ", DEVICEMAP | PORTABLE)"));
    auto buffer = std::make_unique<CudaBuffer>(device_, kind, p, bytes);
    // Device code and host threads name the memory by one address (the device state holds it):
    // with unified addressing (every 64-bit platform CUDA 12 supports) they are the same.
    CUdeviceptr mapped = 0;
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuMemHostGetDevicePointer(&mapped, p, 0),
                                      "cuMemHostGetDevicePointer(" + what + ")"));
    if (mapped != reinterpret_cast<CUdeviceptr>(p)) {
      return error(Code::kUnsupported,
                   log::format("%s: the device sees it at %p, the host at %p (no unified "
                               "addressing)",
                               what.c_str(), reinterpret_cast<void*>(mapped), p));
    }
    std::memset(p, 0, bytes);
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  // A synchronous cudaMemcpy from pageable memory returns once the data is staged, before it
  // lands (measured on the H200: 32 KiB copies were unfinished in 113 of 300 rounds), and the
  // attribute that makes such copies synchronous (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) is refused for
  // VMM memory there. So shmem_quiet and shmem_barrier_all wait for the calling thread's default
  // streams (legacy and per-thread), where those copies run: what a user who wrote the heap with
  // cudaMemcpy and then called a barrier expects to find on the other PEs.
  Status quiet() override {
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuStreamSynchronize(CU_STREAM_LEGACY),
                                      "quiet: cuStreamSynchronize(legacy default stream)"));
    return drv_.check(drv_.cuStreamSynchronize(CU_STREAM_PER_THREAD),
                      "quiet: cuStreamSynchronize(per-thread default stream)");
  }

  Status fill(void* dst, int c, size_t bytes) override {
    if (bytes == 0) return Status::ok();
    if (dst == nullptr) return error(Code::kInvalidArgument, "fill: null address");
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    VSHMEM_RETURN_IF_ERROR(drv_.check(
        drv_.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), static_cast<unsigned char>(c),
                             bytes, stream_),
        log::format("fill: cuMemsetD8Async(%p, 0x%02x, %zu bytes)", dst, c & 0xff, bytes)));
    return drv_.check(drv_.cuStreamSynchronize(stream_), "fill: cuStreamSynchronize");
  }

  Result<proxy::MailboxView> inbound_mailbox(const InboundSettings& settings) override {
    std::lock_guard<std::mutex> lock(mailbox_mu_);
    if (mailbox_ != nullptr) return mailbox_->view();
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    std::unique_ptr<Buffer> box, claim, bounce;
    VSHMEM_ASSIGN_OR_RETURN(box, allocate(BufferKind::kDeviceMappedHost, sizeof(proxy::Mailbox)));
    VSHMEM_ASSIGN_OR_RETURN(
        claim, allocate(BufferKind::kDevice, proxy::kMailboxGpuWords * sizeof(uint64_t)));
    const size_t copy_max = std::min<size_t>(settings.copy_max, proxy::kMailboxBounceBytes);
    if (copy_max > 0) {
      VSHMEM_ASSIGN_OR_RETURN(bounce,
                              allocate(BufferKind::kDeviceMappedHost, proxy::kMailboxBounceBytes));
    }
    // Its own stream: a fallback kernel held in a queue must not hold up fill() and copies.
    CUstream stream = nullptr;
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                                      "cuStreamCreate(inbound atomics)"));
    mailbox_stream_ = stream;
    mailbox_box_ = std::move(box);
    mailbox_claim_ = std::move(claim);
    mailbox_bounce_ = std::move(bounce);
    mailbox_copy_max_ = copy_max;
    const proxy::MailboxView view{static_cast<proxy::Mailbox*>(mailbox_box_->address()),
                                  static_cast<uint64_t*>(mailbox_claim_->address())};
    mailbox_ = std::make_unique<InboundMailbox>(
        view, settings.timeout_ns,
        [this, view](uint64_t launch) { return launch_fallback(view, launch); }, settings.look_ns,
        mailbox_bounce_ != nullptr ? mailbox_bounce_->address() : nullptr,
        mailbox_bounce_ != nullptr ? copy_max : 0);
    return view;
  }

  Status atomic(const AtomicRequest& request, uint64_t* result) override {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(request.address);
    if (request.width != 4 && request.width != 8) {
      return error(Code::kInvalidArgument, log::format("atomic(%p): width %u is not 4 or 8",
                                                       request.address, request.width));
    }
    if (addr == 0 || addr % request.width != 0) {
      return error(Code::kInvalidArgument,
                   log::format("atomic(%p): the address is not aligned to %u bytes",
                               request.address, request.width));
    }
    if (!device_->contains(addr, request.width)) {
      return error(Code::kInvalidArgument,
                   log::format("atomic(%p, %u bytes): not inside memory mapped by this provider",
                               request.address, request.width));
    }
    AtomicPtxOp op = AtomicPtxOp::kFetch;
    uint64_t operand = request.operand;
    switch (request.op) {
      case AtomicOp::kFetch: op = AtomicPtxOp::kFetch; break;
      case AtomicOp::kSet:
      case AtomicOp::kSwap: op = AtomicPtxOp::kSwap; break;
      case AtomicOp::kCompareSwap: op = AtomicPtxOp::kCompareSwap; break;
      case AtomicOp::kFetchAdd: op = AtomicPtxOp::kAdd; break;
      case AtomicOp::kFetchAnd: op = AtomicPtxOp::kAnd; break;
      case AtomicOp::kFetchOr: op = AtomicPtxOp::kOr; break;
      case AtomicOp::kFetchXor: op = AtomicPtxOp::kXor; break;
      default:
        return error(Code::kInvalidArgument,
                     log::format("atomic(%p): unknown operation %d", request.address,
                                 static_cast<int>(request.op)));
    }
    uint64_t compare = request.compare;
    if (request.width == 4) {
      operand &= 0xffffffffu;
      compare &= 0xffffffffu;
    }
    unsigned op_code = static_cast<unsigned>(op);
    CUdeviceptr target = static_cast<CUdeviceptr>(addr);

    if (InboundMailbox* mailbox = mailbox_ready()) {
      const stall::Scope watched("cuda provider: atomic (inbound mailbox)", request.width);
      AtomicRequest r = request;
      r.operand = operand;
      r.compare = compare;
      return mailbox->perform(r, result);
    }
    const stall::Scope watched("cuda provider: atomic (kernel launch, copy)", request.width);
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    std::lock_guard<std::mutex> lock(atomic_mu_);  // one result buffer
    CUdeviceptr result_ptr = result_buf_;
    void* args[] = {&target, &operand, &compare, &result_ptr, &op_code};
    CUfunction fn = request.width == 4 ? atomic_b32_ : atomic_b64_;
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream_, args, nullptr),
                   log::format("atomic(%p): cuLaunchKernel(vshmem_atomic_b%u)", request.address,
                               request.width * 8)));
    uint64_t fetched = 0;
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(&fetched),
                                                         result_buf_, sizeof(fetched), stream_),
                                      "atomic: cuMemcpyAsync(result)"));
    VSHMEM_RETURN_IF_ERROR(
        drv_.check(drv_.cuStreamSynchronize(stream_), "atomic: cuStreamSynchronize"));
    if (result != nullptr) *result = fetched;
    return Status::ok();
  }

 private:
  InboundMailbox* mailbox_ready() {
    std::lock_guard<std::mutex> lock(mailbox_mu_);
    return mailbox_.get();
  }

  // The fallback kernel: one thread on the mailbox's own stream
  // (runtime/memory/cuda_atomic_ptx.cpp, vshmem_mailbox_serve).
  Status launch_fallback(const proxy::MailboxView& view, uint64_t launch) {
    ScopedContext scope(*device_);
    VSHMEM_RETURN_IF_ERROR(scope.status());
    auto box = reinterpret_cast<CUdeviceptr>(view.box);
    auto claimed = reinterpret_cast<CUdeviceptr>(view.claimed);
    void* args[] = {&box, &claimed, &launch};
    return drv_.check(
        drv_.cuLaunchKernel(mailbox_fn_, 1, 1, 1, 1, 1, 1, 0, mailbox_stream_, args, nullptr),
        "cuLaunchKernel(vshmem_mailbox_serve)");
  }

  Status check_size(const char* call, size_t size) const {
    if (size == 0 || size % granularity_ != 0) {
      return error(Code::kInvalidArgument,
                   log::format("%s(%zu bytes): the size is not a non-zero multiple of the "
                               "granularity %zu",
                               call, size, granularity_));
    }
    return Status::ok();
  }

  // One allocation of the granularity with prop_, exported once per candidate kind.
  Status probe(const std::vector<HandleKind>& kinds) {
    size_t size = 0;
    VSHMEM_RETURN_IF_ERROR(drv_.check(
        drv_.cuMemGetAllocationGranularity(&size, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity(minimum)"));
    CUmemGenericAllocationHandle handle = 0;
    VSHMEM_RETURN_IF_ERROR(drv_.check(drv_.cuMemCreate(&handle, size, &prop_, 0),
                                      log::format("cuMemCreate(%zu bytes)", size)));
    CudaPhysical allocation(device_, handle, size, false);  // released at scope exit
    for (HandleKind k : kinds) {
      auto exported = allocation.export_handle(k);
      if (!exported) return exported.status();
    }
    return Status::ok();
  }

  const char* imex_dir() const {
    return drv_.imex_channel_dir != nullptr ? drv_.imex_channel_dir
                                            : "/dev/nvidia-caps-imex-channels";
  }

  uint64_t pci_token(int ordinal) const {
    CUdevice dev;
    int domain = 0, bus = 0, slot = 0;
    if (drv_.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
        drv_.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) !=
            CUDA_SUCCESS ||
        drv_.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
        drv_.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS) {
      // Unknown: a token no other process can have (bit 63 is never set by a PCI location), so
      // that no peer maps it and no PE counts it as sharing its GPU.
      return (1ull << 63) | (static_cast<uint64_t>(getpid()) << 16) |
             static_cast<uint64_t>(ordinal);
    }
    return (static_cast<uint64_t>(domain) << 32) | (static_cast<uint64_t>(bus) << 8) |
           static_cast<uint64_t>(slot);
  }

  // Read/write for the PE's own device, and for every other local device that can reach the
  // memory's device, so that a kernel on any of them may use the mapping.
  Status set_access(CUdeviceptr va, const CudaPhysical& phys) {
    const int own = device_->ordinal();
    int owner = own;
    CUmemAllocationProp props = {};
    if (drv_.cuMemGetAllocationPropertiesFromHandle(&props, phys.handle()) == CUDA_SUCCESS &&
        props.location.type == CU_MEM_LOCATION_TYPE_DEVICE && props.location.id >= 0 &&
        props.location.id < static_cast<int>(caps_.devices.size()) && !phys.imported()) {
      owner = props.location.id;
    }
    // An imported allocation's device id is the exporter's ordinal, which means nothing here
    // (CUDA_VISIBLE_DEVICES may differ): grant only our own device, the one that must reach it.
    std::vector<CUmemAccessDesc> descs;
    for (int d = 0; d < static_cast<int>(caps_.devices.size()); ++d) {
      if (d != own && (phys.imported() || !caps_.can_access_peer[d][owner])) continue;
      CUmemAccessDesc desc = {};
      desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      desc.location.id = d;
      desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      descs.push_back(desc);
    }
    CUresult r = drv_.cuMemSetAccess(va, phys.size(), descs.data(), descs.size());
    if (r != CUDA_SUCCESS && descs.size() > 1) {
      VSHMEM_INFO("cuMemSetAccess for %zu devices: %s; granting device %d only", descs.size(),
                  drv_.describe(r).c_str(), own);
      descs.assign(1, CUmemAccessDesc{});
      descs[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      descs[0].location.id = own;
      descs[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = drv_.cuMemSetAccess(va, phys.size(), descs.data(), 1);
    }
    return drv_.check(r, log::format("cuMemSetAccess(0x%zx, %zu bytes, device %d read/write)",
                                     static_cast<size_t>(va), phys.size(), own));
  }

  std::shared_ptr<CudaDevice> device_;
  CudaNodeCaps caps_;
  const CudaDriver& drv_;
  CUmemAllocationProp prop_ = {};
  size_t granularity_ = 0;
  size_t minimum_ = 0;  // the smallest allocation and mapping step
  bool sync_memops_warned_ = false;
  std::vector<HandleKind> kinds_;
  CUstream stream_ = nullptr;
  // register_host() found registered by someone else: left registered by unregister_host()
  // (guarded by started_mu_).
  std::vector<void*> foreign_registered_;
  // copy_start()'s streams, and which of them are idle (indices).
  std::mutex started_mu_;
  std::vector<CUstream> started_streams_;
  struct StartedCopy {
    std::chrono::steady_clock::time_point since;
    size_t bytes = 0;
    bool warned = false;
  };
  std::vector<StartedCopy> started_at_;  // per stream: its copy in flight
  std::vector<size_t> started_free_;
  CUmodule module_ = nullptr;
  CUfunction atomic_b32_ = nullptr;
  CUfunction atomic_b64_ = nullptr;
  CUdeviceptr result_buf_ = 0;
  std::mutex atomic_mu_;
  // The inbound atomic mailbox, once made (inbound_mailbox()).
  CUfunction mailbox_fn_ = nullptr;
  std::mutex mailbox_mu_;
  std::unique_ptr<Buffer> mailbox_box_;
  std::unique_ptr<Buffer> mailbox_claim_;
  std::unique_ptr<Buffer> mailbox_bounce_;  // copies' bounce buffer (device-mapped host memory)
  size_t mailbox_copy_max_ = 0;             // copies up to this size go through the mailbox
  CUstream mailbox_stream_ = nullptr;
  std::unique_ptr<InboundMailbox> mailbox_;
  CudaMulticast multicast_;
};

// VSHMEM_DEVICE, else the current context's device, else local_rank % count.
Result<int> choose_device(const CudaDriver& drv, const ProviderOptions& options, std::string* why) {
  const int count = drv.device_count;
  if (auto value = env::get("VSHMEM_DEVICE")) {
    auto parsed = env::parse_int(*value, 0, count - 1);
    if (!parsed) {
      return parsed.status().with_context(
          log::format("VSHMEM_DEVICE: %d device(s) visible: ", count));
    }
    *why = "VSHMEM_DEVICE";
    return static_cast<int>(parsed.value());
  }
  CUcontext current = nullptr;
  VSHMEM_RETURN_IF_ERROR(drv.check(drv.cuCtxGetCurrent(&current), "cuCtxGetCurrent"));
  if (current != nullptr) {
    CUdevice dev = 0;
    VSHMEM_RETURN_IF_ERROR(drv.check(drv.cuCtxGetDevice(&dev), "cuCtxGetDevice"));
    // CUdevice is the ordinal for the devices this process sees.
    *why = "the context current in the calling thread";
    return static_cast<int>(dev);
  }
  if (options.local_rank < 0) {
    return error(Code::kInvalidArgument,
                 log::format("local rank %d is negative", options.local_rank));
  }
  *why = log::format("local rank %d %% %d devices", options.local_rank, count);
  return options.local_rank % count;
}

}  // namespace

namespace {
std::atomic<const CudaDriver*> g_test_driver{nullptr};
}  // namespace

void use_fake_driver_for_tests(const CudaDriver* driver) {
  g_test_driver.store(driver != nullptr && driver->fake ? driver : nullptr);
}

Result<std::unique_ptr<MemoryProvider>> make_cuda_provider(const ProviderOptions& options) {
  if (const CudaDriver* fake = g_test_driver.load()) {
    VSHMEM_INFO("cuda provider on the test double of the driver (tests only)");
    return make_cuda_provider_with_driver(*fake, options);
  }
  VSHMEM_ASSIGN_OR_RETURN(const CudaDriver* drv, cuda_driver());
  return make_cuda_provider_with_driver(*drv, options);
}

Result<std::unique_ptr<MemoryProvider>> make_cuda_provider_with_driver(
    const CudaDriver& driver, const ProviderOptions& options) {
  const CudaDriver* drv = &driver;
  VSHMEM_ASSIGN_OR_RETURN(HandleTypeChoice choice,
                          parse_handle_type(env::get("VSHMEM_HANDLE_TYPE")));
  VSHMEM_ASSIGN_OR_RETURN(bool compressible, env::bool_var("VSHMEM_COMPRESSIBLE", false));
  VSHMEM_ASSIGN_OR_RETURN(CudaNodeCaps caps, query_node_caps(*drv));
  log_node_caps(caps);
  std::string why;
  VSHMEM_ASSIGN_OR_RETURN(int ordinal, choose_device(*drv, options, &why));
  const CudaDeviceCaps& dc = caps.devices[ordinal];
  if (!dc.vmm) {
    return error(Code::kUnsupported,
                 log::format("device %d (%s) does not support virtual memory management "
                             "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED=0)",
                             ordinal, dc.name.c_str()));
  }
  CUdevice dev = 0;
  VSHMEM_RETURN_IF_ERROR(
      drv->check(drv->cuDeviceGet(&dev, ordinal), log::format("cuDeviceGet(%d)", ordinal)));
  CUcontext ctx = nullptr;
  VSHMEM_RETURN_IF_ERROR(drv->check(drv->cuDevicePrimaryCtxRetain(&ctx, dev),
                                    log::format("cuDevicePrimaryCtxRetain(device %d)", ordinal)));
  auto device = std::make_shared<CudaDevice>(*drv, ordinal, dev, ctx);  // releases from here on
  VSHMEM_RETURN_IF_ERROR(device->make_current());
  VSHMEM_INFO("using CUDA device %d (%s), chosen by %s", ordinal, dc.name.c_str(), why.c_str());
  auto provider = std::make_unique<CudaProvider>(std::move(device), std::move(caps));
  VSHMEM_RETURN_IF_ERROR(provider->init(choice, compressible));
  return std::unique_ptr<MemoryProvider>(std::move(provider));
}

}  // namespace vshmem::detail
