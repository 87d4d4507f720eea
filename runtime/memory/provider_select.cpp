// VSHMEM_BACKEND chooses the memory provider. auto prefers device memory when the caller says the
// program can use it (it links the device library) and a device is usable, and says which it
// chose and why; an explicit choice that cannot be honoured is an error, never a silent fallback.
#include <dlfcn.h>
#include <stdlib.h>
#include <strings.h>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/memory/cuda_provider.hpp"
#if defined(VSHMEM_CUDA_PROVIDER)
#include "runtime/memory/cuda_driver.hpp"
#endif
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
  // Checked whatever the backend, so that a typo never passes silently on the host heap.
  VSHMEM_RETURN_IF_ERROR(detail::parse_handle_type(env::get("VSHMEM_HANDLE_TYPE")).status());
  std::string why;
  auto chosen = [&](std::unique_ptr<MemoryProvider> p) {
    VSHMEM_INFO("heap: %s memory: %s", p->name(), why.c_str());
    if (options.chosen_because != nullptr) *options.chosen_because = why;
    return p;
  };
  if (backend == detail::Backend::kHost) {
    why = "VSHMEM_BACKEND=host";
    return chosen(make_host_provider());
  }
  if (backend == detail::Backend::kAuto && !options.auto_tries_device) {
    why =
        "VSHMEM_BACKEND=auto and the program does not link the vshmem device library, so it "
        "reaches symmetric objects with the CPU (VSHMEM_BACKEND=cuda puts the heap in GPU memory)";
    return chosen(make_host_provider());
  }
  auto cuda = detail::try_cuda(options);
  if (cuda) {
    why = backend == detail::Backend::kCuda
              ? "VSHMEM_BACKEND=cuda"
              : "VSHMEM_BACKEND=auto, the program links the vshmem device library and a GPU is "
                "usable (VSHMEM_BACKEND=host puts the heap in host memory)";
    return chosen(std::move(cuda).value());
  }
  // Only "no usable device" falls back; a malformed variable or a failing driver call is a
  // real error even under auto.
  if (backend == detail::Backend::kAuto && cuda.status().code() == Code::kUnsupported) {
    why =
        "VSHMEM_BACKEND=auto and the program links the vshmem device library, but no CUDA "
        "device is usable: " +
        cuda.status().message();
    return chosen(make_host_provider());
  }
  std::string context = log::format("VSHMEM_BACKEND=%s: ", detail::backend_name(backend));
  if (cuda.status().code() == Code::kUnsupported) context += "no usable CUDA device: ";
  return cuda.status().with_context(context);
}

ModuleLoading prefer_eager_module_loading() {
  if (env::is_set("CUDA_MODULE_LOADING")) return ModuleLoading::kUserChoice;
  // cuInit reads the variable: once libcuda is in the process (the application's CUDA calls, or
  // ours) the mode is fixed.
  if (void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); lib != nullptr) {
    ::dlclose(lib);
    return ModuleLoading::kCudaStarted;
  }
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  return ModuleLoading::kEagerSet;
}

bool cuda_loads_lazily() {
#if defined(VSHMEM_CUDA_PROVIDER)
  Result<const detail::CudaDriver*> driver = detail::cuda_driver();
  if (!driver.is_ok()) return false;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  return (*driver)->cuModuleGetLoadingMode(&mode) == CUDA_SUCCESS && mode == CU_MODULE_LAZY_LOADING;
#else
  return false;
#endif
}

}  // namespace vshmem
