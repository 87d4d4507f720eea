#include "runtime/api/launcher_link.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/process_info.hpp"

namespace vshmem::detail {
namespace {

pid_t find_launcher() {
  auto pid_text = env::get("VSHMEM_LAUNCHER_PID");
  if (!pid_text) return 0;
  auto pid = env::parse_int(*pid_text, 2, 1 << 30);
  auto start_text = env::get("VSHMEM_LAUNCHER_START");
  auto start = start_text ? env::parse_int(*start_text, 1, (1ll << 62)) : Result<long long>(0ll);
  const char* why = nullptr;
  if (!pid) {
    why = "it is not a process id";
  } else if (!start_text || !start || *start <= 0) {
    why = "VSHMEM_LAUNCHER_START, the launcher's start time, is missing or malformed";
  } else if (!is_our_ancestor(static_cast<pid_t>(*pid))) {
    why = "that process is not an ancestor of this one (a stale or inherited value)";
  } else if (process_start_time(static_cast<pid_t>(*pid)) != static_cast<uint64_t>(*start)) {
    why = "that process started at another time than the launcher did (a reused pid)";
  }
  if (why != nullptr) {
    VSHMEM_WARN("VSHMEM_LAUNCHER_PID=%s is not this PE's launcher: %s; it will not be signalled",
                pid_text->c_str(), why);
    return 0;
  }
  return static_cast<pid_t>(*pid);
}

void on_terminate(int sig) {
  // Not async-signal-safe in the strict sense: if the signal interrupted this very thread inside
  // stdio, the flush may see a half-updated buffer or wait for its lock. The launcher's SIGKILL
  // after its grace period bounds the second case; without the flush the output is lost anyway.
  std::fflush(stdout);
  std::fflush(stderr);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

pid_t verified_launcher_pid() {
  static std::once_flag once;
  static pid_t pid = 0;
  std::call_once(once, [] { pid = find_launcher(); });
  return pid;
}

void tell_launcher(int signal, int value) {
  if (pid_t pid = verified_launcher_pid()) {
    union sigval v;
    v.sival_int = value;
    ::sigqueue(pid, signal, v);
  }
}

void flush_output_on_terminate() {
  struct sigaction old {};
  if (::sigaction(SIGTERM, nullptr, &old) != 0 || old.sa_handler != SIG_DFL ||
      (old.sa_flags & SA_SIGINFO)) {
    return;  // the program handles SIGTERM itself
  }
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  ::sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace vshmem::detail
