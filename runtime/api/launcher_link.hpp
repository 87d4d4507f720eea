// What a PE tells the vshmemrun that started it (runtime/bootstrap/launcher_protocol.hpp), and
// the proof that the pid in VSHMEM_LAUNCHER_PID is that vshmemrun: a stale or inherited value
// must never make a PE signal an unrelated process.
#pragma once

#include <sys/types.h>

namespace vshmem::detail {

// The pid of the vshmemrun that started this PE, or 0. Proven, not trusted: the process must be
// an ancestor of ours and have the start time vshmemrun put in VSHMEM_LAUNCHER_START (so that a
// reused pid does not pass). Decided once per process.
pid_t verified_launcher_pid();
// sigqueue(signal, value) to the verified launcher; nothing when there is none.
void tell_launcher(int signal, int value);
// A PE that the launcher stops (SIGTERM, after another PE failed) writes out what its C library
// still buffers before it ends, so that vshmemrun can pass on everything every PE printed.
// Installed only where the program left SIGTERM at its default.
void flush_output_on_terminate();

}  // namespace vshmem::detail
