// Calls that can block for reasons outside this process's control (a CUDA call that waits for
// work queued on the GPU behind a kernel that itself waits for a remote PE, a peer that stops
// answering) report themselves when they do: a Scope marks such a call while it runs, and a watch
// thread, when one runs, prints once per call a warning for each Scope older than its limit,
// naming the call, its thread, how long it has waited, and what every thread of the process is
// doing (/proc/self/task: state, kernel wait channel, system call). A hang then leaves a trace of
// where it is stuck, on the PE that is stuck, also where no debugger can attach (CUDA MPS).
//
// Cost while no watch runs: one relaxed load per Scope. While one runs: a few atomic operations
// on one of a fixed set of slots (a Scope that finds no free slot is not tracked).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vshmem::stall {

class Scope {
 public:
  // what: a string literal (kept by pointer), e.g. "cuda provider: copy".
  Scope(const char* what, size_t bytes) noexcept;
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  int slot_ = -1;
};

// Starts the watch thread (counted: the first start starts it, the matching last stop ends it);
// `after` is how old a call must be to be reported (the first start's value holds).
void start(std::chrono::milliseconds after);
void stop();

// What a report says about the calls in progress that are older than `after` (the watch's own
// check; the tests call it directly).
struct InFlight {
  std::string what;
  size_t bytes = 0;
  pid_t tid = 0;
  double seconds = 0;
};
std::vector<InFlight> in_flight_older_than(std::chrono::milliseconds after);

// One line per thread of this process: "tid name state wchan syscall".
std::string thread_states();

}  // namespace vshmem::stall
