// What libvshmem exports. The library is compiled with -fvisibility=hidden and this header is
// force-included (-include) into each of its sources: the public headers' declarations below
// are read with default visibility, so the C API they declare (shmem_*, shmemx_*, SHMEM_TEAM_*,
// the device library's vshmemi_* hooks) is exported and everything else, the runtime's C++
// internals above all, stays inside the library (pshmem_* are made at link time as other names
// of the exported shmem_*). A routine the library must export without a declaration in a public
// header is marked VSHMEM_API.
#pragma once

#define VSHMEM_API __attribute__((visibility("default")))

#pragma GCC visibility push(default)
#include "shmem.h"
#include "shmemx.h"
#include "vshmem/device_hooks.h"
#include "vshmem/peer_access.h"
#pragma GCC visibility pop
