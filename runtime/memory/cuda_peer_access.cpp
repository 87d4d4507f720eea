// The C peer-access utilities of include/vshmem/peer_access.h. Compiled in every build so that
// programs link everywhere; without the toolkit's headers (no cuda provider) they report that no
// device is usable.
#include "vshmem/peer_access.h"

#include <string>

#include "runtime/common/log.hpp"

#if defined(VSHMEM_CUDA_PROVIDER)
#include <mutex>
#include <vector>

#include "runtime/memory/cuda_driver.hpp"
#endif

#define VSHMEM_PEER_API extern "C" __attribute__((visibility("default")))

namespace vshmem::detail {
namespace {

int fail(int code, const std::string& call, const std::string& cause) {
  log::message(log::Level::kError, "%s: %s", call.c_str(), cause.c_str());
  return code;
}

#if defined(VSHMEM_CUDA_PROVIDER)

// Checks the driver and both ordinals; on success *drv is the driver.
int prepare(const std::string& call, int from_dev, int to_dev, const CudaDriver** drv) {
  auto loaded = cuda_driver();
  if (!loaded) return fail(SHMEMX_PEER_ACCESS_ERR_NO_DEVICE, call, loaded.status().message());
  const int n = loaded.value()->device_count;
  if (from_dev < 0 || from_dev >= n || to_dev < 0 || to_dev >= n) {
    return fail(SHMEMX_PEER_ACCESS_ERR_INVALID_ARG, call,
                log::format("device ordinals must be in [0, %d)", n));
  }
  *drv = loaded.value();
  return SHMEMX_PEER_ACCESS_SUCCESS;
}

// Primary contexts retained for peer access, one per device, kept until the process exits:
// peer access is state of the context, and releasing our reference could destroy the context
// and silently drop the setting.
Result<CUcontext> retained_primary_context(const CudaDriver& drv, int ordinal) {
  static std::mutex mu;
  static std::vector<CUcontext> contexts;
  std::lock_guard<std::mutex> lock(mu);
  if (contexts.empty()) contexts.assign(drv.device_count, nullptr);
  if (contexts[ordinal] != nullptr) return contexts[ordinal];
  CUdevice dev = 0;
  VSHMEM_RETURN_IF_ERROR(
      drv.check(drv.cuDeviceGet(&dev, ordinal), log::format("cuDeviceGet(%d)", ordinal)));
  CUcontext ctx = nullptr;
  VSHMEM_RETURN_IF_ERROR(drv.check(drv.cuDevicePrimaryCtxRetain(&ctx, dev),
                                   log::format("cuDevicePrimaryCtxRetain(device %d)", ordinal)));
  contexts[ordinal] = ctx;
  return ctx;
}

int can_access(const CudaDriver& drv, const std::string& call, int from_dev, int to_dev, int* out) {
  if (from_dev == to_dev) {
    *out = 1;
    return SHMEMX_PEER_ACCESS_SUCCESS;
  }
  CUdevice from = 0, to = 0;
  int can = 0;
  Status st = drv.check(drv.cuDeviceGet(&from, from_dev), "cuDeviceGet");
  if (st) st = drv.check(drv.cuDeviceGet(&to, to_dev), "cuDeviceGet");
  if (st) st = drv.check(drv.cuDeviceCanAccessPeer(&can, from, to), "cuDeviceCanAccessPeer");
  if (!st) return fail(SHMEMX_PEER_ACCESS_ERR_DRIVER, call, st.message());
  *out = can != 0 ? 1 : 0;
  return SHMEMX_PEER_ACCESS_SUCCESS;
}

// Runs fn with from_dev's primary context current, restoring the caller's context after.
template <typename Fn>
int with_context(const CudaDriver& drv, const std::string& call, CUcontext ctx, Fn fn) {
  Status st = drv.check(drv.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
  if (!st) return fail(SHMEMX_PEER_ACCESS_ERR_DRIVER, call, st.message());
  int rc = fn();
  CUcontext popped = nullptr;
  st = drv.check(drv.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  if (!st && rc == SHMEMX_PEER_ACCESS_SUCCESS) {
    return fail(SHMEMX_PEER_ACCESS_ERR_DRIVER, call, st.message());
  }
  return rc;
}

int change(bool enable, int from_dev, int to_dev) {
  const std::string call =
      log::format("shmemx_peer_access_%s(%d, %d)", enable ? "enable" : "disable", from_dev, to_dev);
  const CudaDriver* drv = nullptr;
  if (int rc = prepare(call, from_dev, to_dev, &drv); rc != SHMEMX_PEER_ACCESS_SUCCESS) {
    return rc;
  }
  if (from_dev == to_dev) {
    return fail(SHMEMX_PEER_ACCESS_ERR_INVALID_ARG, call,
                "peer access is between two different devices; a device always reaches its own "
                "memory");
  }
  int can = 0;
  if (int rc = can_access(*drv, call, from_dev, to_dev, &can); rc != SHMEMX_PEER_ACCESS_SUCCESS) {
    return rc;
  }
  if (enable && !can) {
    return fail(SHMEMX_PEER_ACCESS_ERR_NOT_SUPPORTED, call,
                log::format("cuDeviceCanAccessPeer(%d, %d) = 0: the topology allows no direct "
                            "access in this direction",
                            from_dev, to_dev));
  }
  auto from_ctx = retained_primary_context(*drv, from_dev);
  if (!from_ctx) return fail(SHMEMX_PEER_ACCESS_ERR_DRIVER, call, from_ctx.status().message());
  auto to_ctx = retained_primary_context(*drv, to_dev);
  if (!to_ctx) return fail(SHMEMX_PEER_ACCESS_ERR_DRIVER, call, to_ctx.status().message());
  CUcontext peer = to_ctx.value();
  return with_context(*drv, call, from_ctx.value(), [&]() {
    CUresult r = enable ? drv->cuCtxEnablePeerAccess(peer, 0) : drv->cuCtxDisablePeerAccess(peer);
    if (r == CUDA_SUCCESS || (enable && r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) ||
        (!enable && r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)) {
      VSHMEM_INFO("%s: done%s", call.c_str(), r == CUDA_SUCCESS ? "" : " (it already was)");
      return static_cast<int>(SHMEMX_PEER_ACCESS_SUCCESS);
    }
    int code = r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED ? SHMEMX_PEER_ACCESS_ERR_NOT_SUPPORTED
                                                       : SHMEMX_PEER_ACCESS_ERR_DRIVER;
    return fail(
        code, call,
        drv->check(r, enable ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess").message());
  });
}

#endif  // VSHMEM_CUDA_PROVIDER

}  // namespace
}  // namespace vshmem::detail

VSHMEM_PEER_API int shmemx_peer_access_query(int from_dev, int to_dev, int* can_access) {
  using namespace vshmem::detail;  // NOLINT(google-build-using-namespace)
  const std::string call =
      vshmem::log::format("shmemx_peer_access_query(%d, %d)", from_dev, to_dev);
  if (can_access == nullptr) {
    return fail(SHMEMX_PEER_ACCESS_ERR_INVALID_ARG, call, "can_access is a null pointer");
  }
#if defined(VSHMEM_CUDA_PROVIDER)
  const CudaDriver* drv = nullptr;
  if (int rc = prepare(call, from_dev, to_dev, &drv); rc != SHMEMX_PEER_ACCESS_SUCCESS) {
    return rc;
  }
  int can = 0;
  if (int rc = vshmem::detail::can_access(*drv, call, from_dev, to_dev, &can);
      rc != SHMEMX_PEER_ACCESS_SUCCESS) {
    return rc;
  }
  *can_access = can;
  return SHMEMX_PEER_ACCESS_SUCCESS;
#else
  return fail(SHMEMX_PEER_ACCESS_ERR_NO_DEVICE, call, "libvshmem was built without CUDA support");
#endif
}

VSHMEM_PEER_API int shmemx_peer_access_enable(int from_dev, int to_dev) {
#if defined(VSHMEM_CUDA_PROVIDER)
  return vshmem::detail::change(true, from_dev, to_dev);
#else
  return vshmem::detail::fail(
      SHMEMX_PEER_ACCESS_ERR_NO_DEVICE,
      vshmem::log::format("shmemx_peer_access_enable(%d, %d)", from_dev, to_dev),
      "libvshmem was built without CUDA support");
#endif
}

VSHMEM_PEER_API int shmemx_peer_access_disable(int from_dev, int to_dev) {
#if defined(VSHMEM_CUDA_PROVIDER)
  return vshmem::detail::change(false, from_dev, to_dev);
#else
  return vshmem::detail::fail(
      SHMEMX_PEER_ACCESS_ERR_NO_DEVICE,
      vshmem::log::format("shmemx_peer_access_disable(%d, %d)", from_dev, to_dev),
      "libvshmem was built without CUDA support");
#endif
}
