// What /proc says about a process: enough to tell one process from another that later gets the
// same pid, and whether a process is one of ours' ancestors. Also the random names and secrets
// that tell one job from another (the launcher's and the unique-ID bootstrap's).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "runtime/common/status.hpp"

namespace vshmem {

// The start time of a process (field 22 of /proc/<pid>/stat, clock ticks since boot), or 0 when
// it cannot be read. With the pid it names one process, also after the pid has been reused.
uint64_t process_start_time(pid_t pid);
// The state of a process (field 3 of /proc/<pid>/stat: 'R', 'S', 'T' stopped, 't' stopped by a
// debugger, ...), or 0 when it cannot be read.
char process_state(pid_t pid);
// The parent of a process, or -1 when it cannot be read.
pid_t process_parent(pid_t pid);
// True when `pid` is the parent, grandparent, ... of the calling process.
bool is_our_ancestor(pid_t pid);
// `bytes` random bytes (getrandom) as 2 * bytes lower-case hex characters.
Result<std::string> random_hex(size_t bytes);

}  // namespace vshmem
