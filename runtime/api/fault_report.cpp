#include "runtime/api/fault_report.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <utility>

namespace vshmem::detail {
namespace {

std::atomic<uintptr_t> g_begin{0}, g_end{0};
std::atomic<bool> g_reported{false};
bool g_installed = false;
struct sigaction g_prev_segv {};
struct sigaction g_prev_bus {};
// Written at install time, so that the handler only copies bytes.
char g_prefix[64];
size_t g_prefix_len = 0;
constexpr char kCause[] =
    ", inside the symmetric heap, which is GPU memory: the CPU cannot load or store it. "
    "Reach symmetric objects through shmem_* calls (put, get, p, g, atomics) or from kernels, or "
    "run with VSHMEM_BACKEND=host to put the heap in host memory (the default for programs that "
    "do not link the vshmem device library).\n";

void write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// "0x..." of v at out; returns the length.
size_t format_hex(uintptr_t v, char* out) {
  char digits[2 * sizeof(uintptr_t)];
  size_t n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  out[0] = '0';
  out[1] = 'x';
  for (size_t i = 0; i < n; ++i) out[2 + i] = digits[n - 1 - i];
  return 2 + n;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
  if (a >= g_begin.load(std::memory_order_relaxed) && a < g_end.load(std::memory_order_relaxed) &&
      !g_reported.exchange(true)) {
    // One write(2): PEs that fault at once share stderr, and separate writes would interleave.
    char line[sizeof(g_prefix) + 2 + 2 * sizeof(uintptr_t) + sizeof(kCause)];
    size_t n = 0;
    for (size_t i = 0; i < g_prefix_len; ++i) line[n++] = g_prefix[i];
    n += format_hex(a, line + n);
    for (size_t i = 0; i + 1 < sizeof(kCause); ++i) line[n++] = kCause[i];
    write_all(line, n);
  }
  errno = saved_errno;
  const struct sigaction& prev = sig == SIGBUS ? g_prev_bus : g_prev_segv;
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  // The default action: put it back and return; the access faults again and ends the process.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

}  // namespace

void install_fault_report(int my_pe, uintptr_t begin, uintptr_t end) {
  const int n =
      std::snprintf(g_prefix, sizeof(g_prefix), "vshmem: PE %d: the CPU accessed ", my_pe);
  g_prefix_len = n > 0 ? static_cast<size_t>(n) : 0;
  g_begin = begin;
  g_end = end;
  g_reported = false;
  if (g_installed) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_prev_segv);
  sigaction(SIGBUS, &sa, &g_prev_bus);
  g_installed = true;
}

void remove_fault_report() {
  g_begin = 0;
  g_end = 0;
  if (!g_installed) return;
  struct sigaction current {};
  for (auto [sig, prev] : {std::pair{SIGSEGV, &g_prev_segv}, std::pair{SIGBUS, &g_prev_bus}}) {
    // Only our own handler is replaced: one installed after us (by the program) stays.
    if (sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == on_fault) {
      sigaction(sig, prev, nullptr);
    }
  }
  g_installed = false;
}

}  // namespace vshmem::detail
