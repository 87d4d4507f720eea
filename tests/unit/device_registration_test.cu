// Linking vshmem::device registers the device library with libvshmem even when the program
// references nothing of the library's host side: the only reference is the device state, through
// a kernel's device code (the path an application that only writes kernels takes). Runs without
// a GPU: on a host heap the library is given the empty state, and counts it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdlib>

// Never launched: it only makes the device link pull in the device library's state object.
__global__ void uses_device_api(int* out) { *out = shmem_my_pe(); }

TEST(DeviceRegistration, LibraryIsRegisteredAndWritten) {
  // Looked up, not linked: a link-time reference would pull the object in by itself.
  auto* calls = static_cast<int*>(dlsym(RTLD_DEFAULT, "vshmemi_device_state_writes"));
  ASSERT_NE(calls, nullptr) << "libvshmem_device's state object was not linked in";
  const int before = *calls;
  setenv("VSHMEM_BACKEND", "host", 0);
  ASSERT_EQ(shmem_init_thread(SHMEM_THREAD_SINGLE, nullptr), 0);
  EXPECT_GT(*calls, before) << "shmem_init did not write the device state";
  const int after_init = *calls;
  shmem_finalize();
  EXPECT_GT(*calls, after_init) << "shmem_finalize did not write the device state";
}
