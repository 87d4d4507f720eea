// The private directory of a job's sockets: <base>/<job id>, mode 0700, owned by the job's user,
// where <base> is $XDG_RUNTIME_DIR/vshmem when that is ours, else /tmp/vshmem-<uid> (0700).
// Only our user (and root) can reach a socket inside, whatever the socket's own mode.
//
// vshmemrun creates the directory of its job, passes it in VSHMEM_SOCKET_DIR and removes it when
// the job ends, whatever happened to the PEs. Under other launchers the PEs create it; a job that
// was killed leaves it behind, and the next job of the user removes such directories once no
// socket in them answers.
#pragma once

#include <string>

#include "runtime/common/status.hpp"

namespace vshmem {

// The base directory, created (0700) when missing and checked: a directory, not a link, owned by
// us, no access for group or others. The error names the path and what is wrong.
Result<std::string> private_base_dir();
// <base>/<job_id>, created and checked like the base. Also sweeps dead jobs' directories.
Result<std::string> private_job_dir(const std::string& job_id);
// Checks that an existing directory is private to us (as above).
Status check_private_dir(const std::string& path);
// The directory of this job's sockets: VSHMEM_SOCKET_DIR when vshmemrun set it (checked), else
// private_job_dir(job_id).
Result<std::string> job_socket_dir(const std::string& job_id);
// Removes the directory and the sockets or files directly inside it (no recursion further).
void remove_private_dir(const std::string& path);

}  // namespace vshmem
