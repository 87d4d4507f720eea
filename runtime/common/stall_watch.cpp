#include "runtime/common/stall_watch.hpp"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/common/log.hpp"

namespace vshmem::stall {
namespace {

constexpr int kSlots = 64;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// state: 0 free, 1 being filled, 2 live. serial changes at every claim, so that the watch can
// tell a slot it reported from the same slot reused by a later call.
struct Slot {
  std::atomic<int> state{0};
  std::atomic<uint64_t> serial{0};
  std::atomic<const char*> what{nullptr};
  std::atomic<size_t> bytes{0};
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> since_ns{0};
  uint64_t reported_serial = 0;  // the watch thread's own
};

Slot g_slots[kSlots];
std::atomic<bool> g_active{false};

std::mutex g_mutex;  // the watch thread's life
std::condition_variable g_cv;
int g_users = 0;
bool g_stopping = false;
int64_t g_after_ms = 0;  // a plain integer: constant-initialized, nothing to throw
std::thread g_thread;

std::string read_line(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "?";
  char buf[512] = {};
  if (std::fgets(buf, sizeof(buf), f) == nullptr) buf[0] = '\0';
  std::fclose(f);
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "-" : s;
}

void watch_loop() {
  std::unique_lock<std::mutex> lock(g_mutex);
  while (!g_stopping) {
    g_cv.wait_for(lock, std::chrono::milliseconds(250));
    if (g_stopping) break;
    const uint64_t now = now_ns();
    const uint64_t limit = static_cast<uint64_t>(g_after_ms) * 1000000ull;
    for (Slot& s : g_slots) {
      if (s.state.load(std::memory_order_acquire) != 2) continue;
      const uint64_t serial = s.serial.load(std::memory_order_acquire);
      const char* what = s.what.load(std::memory_order_relaxed);
      const size_t bytes = s.bytes.load(std::memory_order_relaxed);
      const pid_t tid = s.tid.load(std::memory_order_relaxed);
      const uint64_t since = s.since_ns.load(std::memory_order_relaxed);
      if (s.state.load(std::memory_order_acquire) != 2 ||
          s.serial.load(std::memory_order_acquire) != serial) {
        continue;  // released (or reused) while we read it
      }
      if (s.reported_serial == serial || now - since < limit) continue;
      s.reported_serial = serial;
      log::message(log::Level::kWarn,
                   "%s (%zu bytes, thread %d) has not returned for %.1f s; it may wait for work "
                   "queued on the GPU behind a kernel that waits for another PE, or for a PE that "
                   "does not answer. Threads of this process (tid name state wchan syscall):\n%s",
                   what, bytes, static_cast<int>(tid), static_cast<double>(now - since) * 1e-9,
                   thread_states().c_str());
    }
  }
}

}  // namespace

Scope::Scope(const char* what, size_t bytes) noexcept {
  if (!g_active.load(std::memory_order_relaxed)) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    Slot& s = g_slots[i];
    if (!s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    s.serial.fetch_add(1, std::memory_order_acq_rel);
    s.what.store(what, std::memory_order_relaxed);
    s.bytes.store(bytes, std::memory_order_relaxed);
    s.tid.store(static_cast<pid_t>(::syscall(SYS_gettid)), std::memory_order_relaxed);
    s.since_ns.store(now_ns(), std::memory_order_relaxed);
    s.state.store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

Scope::~Scope() {
  if (slot_ >= 0) g_slots[slot_].state.store(0, std::memory_order_release);
}

void start(std::chrono::milliseconds after) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_users++ > 0) return;
  g_after_ms = after.count();
  g_stopping = false;
  g_active.store(true, std::memory_order_relaxed);
  g_thread = std::thread(watch_loop);
}

void stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_users == 0) return;
    --g_users;
    if (g_users > 0) return;
    g_active.store(false, std::memory_order_relaxed);
    g_stopping = true;
    t = std::move(g_thread);
  }
  g_cv.notify_all();
  if (t.joinable()) t.join();
}

std::vector<InFlight> in_flight_older_than(std::chrono::milliseconds after) {
  std::vector<InFlight> out;
  const uint64_t now = now_ns();
  const uint64_t limit = static_cast<uint64_t>(after.count()) * 1000000ull;
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != 2) continue;
    const uint64_t serial = s.serial.load(std::memory_order_acquire);
    const char* what = s.what.load(std::memory_order_relaxed);
    const uint64_t since = s.since_ns.load(std::memory_order_relaxed);
    InFlight f{what != nullptr ? what : "?", s.bytes.load(std::memory_order_relaxed),
               s.tid.load(std::memory_order_relaxed), static_cast<double>(now - since) * 1e-9};
    if (s.state.load(std::memory_order_acquire) != 2 ||
        s.serial.load(std::memory_order_acquire) != serial || now - since < limit) {
      continue;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string thread_states() {
  std::string out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return "  (no /proc/self/task)\n";
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/self/task/") + e->d_name;
    const std::string stat = read_line(base + "/stat");
    // "tid (name) S ...": the state follows the name's closing parenthesis.
    const size_t close = stat.rfind(')');
    const char state =
        close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
    const std::string syscall = read_line(base + "/syscall");
    out += log::format("  %s %s %c %s %s\n", e->d_name, read_line(base + "/comm").c_str(), state,
                       read_line(base + "/wchan").c_str(),
                       syscall.substr(0, syscall.find(' ')).c_str());
  }
  ::closedir(d);
  return out;
}

}  // namespace vshmem::stall
