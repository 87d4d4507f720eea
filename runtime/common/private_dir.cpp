#include "runtime/common/private_dir.hpp"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "runtime/common/connection.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

// A job directory whose sockets all refuse connections is removed only when it is older than
// this: a job that is just starting may not have bound its sockets yet.
constexpr time_t kStaleAfterSeconds = 60;

Status make_private(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return error(Code::kSystem, log::format("cannot create the private socket directory %s: %s",
                                            path.c_str(), std::strerror(errno)));
  }
  return check_private_dir(path);
}

// True when some socket directly inside `dir` accepts connections (its job still runs).
bool has_live_socket(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return true;  // cannot tell: leave it alone
  bool live = false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (check_unix_address(path)) {
      auto fd = connect_unix(path, std::chrono::steady_clock::now(), "a socket");
      if (fd.is_ok() || fd.status().code() != Code::kTimeout ||
          fd.status().message().find("Connection refused") == std::string::npos) {
        live = true;
      }
    }
    if (live) break;
  }
  ::closedir(d);
  return live;
}

void sweep(const std::string& base) {
  DIR* d = ::opendir(base.c_str());
  if (d == nullptr) return;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string path = base + "/" + e->d_name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      continue;
    }
    if (now - st.st_mtime < kStaleAfterSeconds || has_live_socket(path)) continue;
    VSHMEM_INFO("removing %s, left behind by a job that ended without cleaning up", path.c_str());
    remove_private_dir(path);
  }
  ::closedir(d);
}

}  // namespace

Status check_private_dir(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return error(Code::kSystem, log::format("private socket directory %s: %s", path.c_str(),
                                            std::strerror(errno)));
  }
  const char* why = nullptr;
  if (!S_ISDIR(st.st_mode)) {
    why = "not a directory (a link or a file is in the way)";
  } else if (st.st_uid != ::geteuid()) {
    why = "owned by another user";
  } else if ((st.st_mode & 077) != 0) {
    why = "open to other users (mode is not 0700)";
  }
  if (why != nullptr) {
    return error(Code::kSystem, log::format("private socket directory %s is %s; remove it or set "
                                            "XDG_RUNTIME_DIR to a directory of your own",
                                            path.c_str(), why));
  }
  return Status::ok();
}

Result<std::string> private_base_dir() {
  if (auto xdg = env::get("XDG_RUNTIME_DIR")) {
    // Only when it is really ours and short enough for socket paths.
    if (xdg->size() < 48 && (*xdg)[0] == '/' && check_private_dir(*xdg)) {
      std::string base = *xdg + "/vshmem";
      if (make_private(base)) return base;
    }
  }
  std::string base = log::format("/tmp/vshmem-%u", static_cast<unsigned>(::geteuid()));
  VSHMEM_RETURN_IF_ERROR(make_private(base));
  return base;
}

Result<std::string> private_job_dir(const std::string& job_id) {
  if (job_id.empty() || job_id.find('/') != std::string::npos || job_id[0] == '.') {
    return error(Code::kInvalidArgument,
                 log::format("job id '%s' cannot name a directory", job_id.c_str()));
  }
  std::string base;
  VSHMEM_ASSIGN_OR_RETURN(base, private_base_dir());
  sweep(base);
  std::string dir = base + "/" + job_id;
  VSHMEM_RETURN_IF_ERROR(make_private(dir));
  return dir;
}

Result<std::string> job_socket_dir(const std::string& job_id) {
  if (auto dir = env::get("VSHMEM_SOCKET_DIR")) {
    VSHMEM_RETURN_IF_ERROR(check_private_dir(*dir).with_context("VSHMEM_SOCKET_DIR: "));
    return *dir;
  }
  return private_job_dir(job_id);
}

void remove_private_dir(const std::string& path) {
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && !e->d_name[2]))) {
        continue;
      }
      ::unlinkat(::dirfd(d), e->d_name, 0);
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

}  // namespace vshmem
