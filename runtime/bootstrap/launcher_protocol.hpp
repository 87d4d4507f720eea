// What a PE tells vshmemrun, besides the socket bootstrap's environment (socket_bootstrap.cpp):
// signals with a value (sigqueue) to the pid in VSHMEM_LAUNCHER_PID.
#pragma once

#include <signal.h>

namespace vshmem::launcher_protocol {

// shmem_global_exit(status): value = status. vshmemrun stops the other PEs and exits with it.
inline int global_exit_signal() { return SIGUSR1; }

// Value 1 when shmem_init has succeeded, 0 when shmem_finalize has completed. A PE that exits
// between the two (status 0 included) leaves the others waiting in their next collective, so
// vshmemrun treats that exit as a failure. A real-time signal, so that notices from several PEs
// queue instead of merging.
inline int shmem_state_signal() { return SIGRTMIN + 1; }

}  // namespace vshmem::launcher_protocol
