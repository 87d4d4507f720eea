#include "runtime/api/job_watch.hpp"

#include <chrono>
#include <cstdlib>
#include <string>

#include "runtime/api/runtime.hpp"
#include "runtime/transport/remote_path.hpp"

namespace vshmem::detail {

namespace {
// Twice per second: a peer seen gone twice in a row (so at least this long) is reported.
constexpr std::chrono::milliseconds kPeriod{500};
constexpr const char* kCall = "job watch";
}  // namespace

std::unique_ptr<JobWatch> JobWatch::start(Runtime& rt) {
  // A process that leaves without shmem_finalize stops the watch first: its peers may be leaving
  // too (not a failure of theirs to report), and the libraries the watch calls into (CUDA, UCX)
  // are torn down during exit.
  static const bool stop_at_exit = [] {
    std::atexit([] {
      if (g_runtime != nullptr) g_runtime->watch.reset();
    });
    return true;
  }();
  (void)stop_at_exit;
  std::unique_ptr<JobWatch> w(new JobWatch(rt));
  auto body = [](void* p) -> void* {
    static_cast<JobWatch*>(p)->run();
    return nullptr;
  };
  w->started_ = pthread_create(&w->thread_, nullptr, body, w.get()) == 0;
  if (!w->started_)
    log::message(log::Level::kWarn, "job watch: pthread_create failed: not watching");
  return w;
}

JobWatch::~JobWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (started_) pthread_join(thread_, nullptr);
}

void JobWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, kPeriod, [this] { return stop_; })) {
    lock.unlock();
    check_once();
    lock.lock();
  }
}

void JobWatch::check_once() {
  Runtime& rt = rt_;
  if (rt.provider != nullptr) {
    Status st = rt.provider->device_fault();
    if (!st) {
      fail(kCall,
           "this PE's GPU can run no more work: %s (a kernel on it trapped, asserted or touched "
           "a bad address; the CUDA context cannot be used again): ending the job",
           st.message().c_str());
    }
  }
  if (rt.peer_watch != nullptr) {
    const int gone = rt.peer_watch->exited_peer();
    if (gone >= 0 && gone == local_gone_) {
      fail(kCall,
           "PE %d (pid %d, on this node) exited without shmem_finalize; the job cannot "
           "complete: ending this PE",
           gone, static_cast<int>(rt.peer_watch->pid_of(gone)));
    }
    local_gone_ = gone;
  }
  RemotePath* remote = rt.transport != nullptr ? rt.transport->remote() : nullptr;
  if (remote != nullptr) {
    std::string cause;
    const int gone = remote->failed_peer(&cause);
    if (gone >= 0 && gone == remote_gone_) {
      fail(kCall,
           "PE %d (on another node) failed or exited: the connection to it broke (%s); the "
           "job cannot complete: ending this PE",
           gone, cause.c_str());
    }
    remote_gone_ = gone;
  }
}

}  // namespace vshmem::detail
