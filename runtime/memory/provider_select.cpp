// VSHMEM_BACKEND chooses the memory provider. auto prefers device memory when a device is usable
// and says why it did not get one; an explicit choice that cannot be honoured is an error, never
// a silent fallback.
#include <strings.h>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/memory/cuda_provider.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem {
namespace detail {

Result<Backend> parse_backend(const std::optional<std::string>& value) {
  if (!value || value->empty() || !strcasecmp(value->c_str(), "auto")) return Backend::kAuto;
  if (!strcasecmp(value->c_str(), "cuda")) return Backend::kCuda;
  if (!strcasecmp(value->c_str(), "host")) return Backend::kHost;
  return error(Code::kInvalidArgument,
               log::format("VSHMEM_BACKEND='%s' is not one of auto|cuda|host", value->c_str()));
}

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kCuda: return "cuda";
    case Backend::kHost: return "host";
  }
  return "?";
}

Result<HandleTypeChoice> parse_handle_type(const std::optional<std::string>& value) {
  if (!value || value->empty() || !strcasecmp(value->c_str(), "auto")) {
    return HandleTypeChoice::kAuto;
  }
  if (!strcasecmp(value->c_str(), "fabric")) return HandleTypeChoice::kFabric;
  if (!strcasecmp(value->c_str(), "posix_fd")) return HandleTypeChoice::kPosixFd;
  return error(
      Code::kInvalidArgument,
      log::format("VSHMEM_HANDLE_TYPE='%s' is not one of auto|fabric|posix_fd", value->c_str()));
}

bool cuda_provider_built() {
#if defined(VSHMEM_CUDA_PROVIDER)
  return true;
#else
  return false;
#endif
}

namespace {

Result<std::unique_ptr<MemoryProvider>> try_cuda(const ProviderOptions& options) {
#if defined(VSHMEM_CUDA_PROVIDER)
  return make_cuda_provider(options);
#else
  return error(Code::kUnsupported,
               "libvshmem was built without the CUDA toolkit's headers, so it has no cuda "
               "provider");
#endif
}

}  // namespace
}  // namespace detail

Result<std::unique_ptr<MemoryProvider>> create_memory_provider(const ProviderOptions& options) {
  VSHMEM_ASSIGN_OR_RETURN(detail::Backend backend,
                          detail::parse_backend(env::get("VSHMEM_BACKEND")));
  if (backend == detail::Backend::kHost) {
    VSHMEM_INFO("VSHMEM_BACKEND=host: using host memory (memfd)");
    return make_host_provider();
  }
  auto cuda = detail::try_cuda(options);
  if (cuda) {
    VSHMEM_INFO("VSHMEM_BACKEND=%s: using CUDA device memory", detail::backend_name(backend));
    return cuda;
  }
  // Only "no usable device" falls back; a malformed variable or a failing driver call is a
  // real error even under auto.
  if (backend == detail::Backend::kAuto && cuda.status().code() == Code::kUnsupported) {
    VSHMEM_INFO("VSHMEM_BACKEND=auto: using host memory (memfd): no usable CUDA device: %s",
                cuda.status().message().c_str());
    return make_host_provider();
  }
  std::string context = log::format("VSHMEM_BACKEND=%s: ", detail::backend_name(backend));
  if (cuda.status().code() == Code::kUnsupported) context += "no usable CUDA device: ";
  return cuda.status().with_context(context);
}

}  // namespace vshmem
