// The cuda memory provider (CUDA VMM through the run-time loaded driver) and the parsing of the
// variables that select and shape it. This header does not include cuda.h, so that
// provider_select.cpp and the tests compile when the toolkit is absent.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/memory/memory.hpp"

namespace vshmem::detail {

// VSHMEM_BACKEND=auto|cuda|host (case-insensitive; unset or empty = auto).
enum class Backend { kAuto, kCuda, kHost };
Result<Backend> parse_backend(const std::optional<std::string>& value);
const char* backend_name(Backend backend);

// VSHMEM_HANDLE_TYPE=auto|fabric|posix_fd (case-insensitive; unset or empty = auto).
enum class HandleTypeChoice { kAuto, kFabric, kPosixFd };
Result<HandleTypeChoice> parse_handle_type(const std::optional<std::string>& value);

// True when libvshmem was built with the cuda provider (the toolkit's headers were found).
bool cuda_provider_built();

// The cuda provider on the device chosen for this PE: VSHMEM_DEVICE if set, else the device of
// the context current in the calling thread, else local_rank % device count. Its primary context
// is retained and made current in the calling thread. Code::kUnsupported with the cause when no
// device is usable; kInvalidArgument for malformed VSHMEM_* variables.
Result<std::unique_ptr<MemoryProvider>> make_cuda_provider(const ProviderOptions& options);

// The same on a given driver table: the real one (cuda_driver()), or a test double that must
// outlive the provider (tests/support/fake_cuda_driver.hpp).
struct CudaDriver;
Result<std::unique_ptr<MemoryProvider>> make_cuda_provider_with_driver(
    const CudaDriver& driver, const ProviderOptions& options);
// Test-only hook: from now on make_cuda_provider (and with it shmem_init) uses `driver` instead
// of loading libcuda. Only a table marked fake (CudaDriver::fake) is accepted; null restores the
// real loader. Set only by test binaries linked with tests/support/fake_cuda_driver.
void use_fake_driver_for_tests(const CudaDriver* driver);

// The PTX of the host-issued atomic kernels (vshmem_atomic_b32, vshmem_atomic_b64).
const char* atomic_ptx();
// The op codes those kernels understand.
enum class AtomicPtxOp : unsigned {
  kFetch = 0,
  kSwap = 1,
  kCompareSwap = 2,
  kAdd = 3,
  kAnd = 4,
  kOr = 5,
  kXor = 6
};

}  // namespace vshmem::detail
