// Linking vshmem::device registers the device-state listener with libvshmem even when the
// program references nothing of the library's host side: the only reference is the device
// state, through a kernel's device code (the path an application that only writes kernels
// takes). Runs without a GPU: the listener is called (and counts) whether or not a device exists.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdlib>

// Never launched: it only makes the device link pull in the device library's state object.
__global__ void uses_device_api(int* out) { *out = shmem_my_pe(); }

TEST(DeviceRegistration, ListenerIsRegisteredAndCalled) {
  // Looked up, not linked: a link-time reference would pull the object in by itself.
  auto* calls = static_cast<int*>(dlsym(RTLD_DEFAULT, "vshmemi_device_listener_calls"));
  ASSERT_NE(calls, nullptr) << "libvshmem_device's state object was not linked in";
  const int before = *calls;
  setenv("VSHMEM_BACKEND", "host", 0);
  ASSERT_EQ(shmem_init_thread(SHMEM_THREAD_SINGLE, nullptr), 0);
  EXPECT_GT(*calls, before) << "shmem_init did not call the device-state listener";
  const int after_init = *calls;
  shmem_finalize();
  EXPECT_GT(*calls, after_init) << "shmem_finalize did not call the device-state listener";
}
