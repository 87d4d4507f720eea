#include "runtime/api/wait_policy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "runtime/common/clock.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

std::atomic<bool> g_spin{false};
std::atomic<bool> g_gathers{false};   // barrier_gathers()
std::atomic<bool> g_all_spin{false};  // every_pe_spins()
std::atomic<int> g_host_pes{1};       // this job's PEs on this host (choose_wait_policy)
std::atomic<int> g_host_cpus{1};      // the CPUs of their masks together (choose_wait_policy)
std::atomic<uint64_t> g_data_look_ns{1'000'000};
int g_bind_cpu = -1;  // choose_wait_policy's answer for bind_to_chosen_cpu

uint64_t hash_name(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

}  // namespace

void host_load(const std::vector<HostCpus>& all, int me, int* pes, int* cpus) {
  cpu_set_t together;
  CPU_ZERO(&together);
  int n = 0;
  for (const HostCpus& h : all) {
    if (h.host != all[me].host) continue;
    ++n;
    CPU_OR(&together, &together, &h.cpus);
  }
  *pes = n;
  *cpus = CPU_COUNT(&together);
}

bool bind_pes_of_several_nodes(int host_pes, int host_cpus) {
  return host_cpus < kSpareCpusPerPe * host_pes;
}

int cpu_to_bind(const std::vector<HostCpus>& all, int me) {
  const HostCpus& mine = all[me];
  int rank_on_host = 0, pes = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].host != mine.host) continue;
    if (!CPU_EQUAL(&all[i].cpus, &mine.cpus)) return -1;  // the launcher bound them
    if (static_cast<int>(i) < me) ++rank_on_host;
    ++pes;
  }
  // Alone on its host: no peer to share a CPU with; oversubscribed: waits yield, the OS places.
  if (pes < 2 || pes > CPU_COUNT(&mine.cpus)) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mine.cpus)) continue;
    if (seen++ == rank_on_host) return cpu;
  }
  return -1;
}

namespace {
// The rule: VSHMEM_WAIT when given, else spin while the host's PEs do not outnumber its CPUs.
bool spins(int32_t forced, int host_pes, int host_cpus) {
  if (forced != kWaitAuto) return forced == kWaitSpin;
  return host_pes <= host_cpus;
}
}  // namespace

bool pe_spins(const std::vector<HostCpus>& all, int i) {
  int pes = 0, cpus = 0;
  host_load(all, i, &pes, &cpus);
  return spins(all[i].forced, pes, cpus);
}

int spinning_pes(const std::vector<HostCpus>& all) {
  // host_load per host, once (not once per PE: jobs of thousands of PEs).
  struct Load {
    int pes = 0;
    cpu_set_t cpus;
  };
  std::map<uint64_t, Load> hosts;
  for (const HostCpus& h : all) {
    auto [it, fresh] = hosts.try_emplace(h.host);
    if (fresh) CPU_ZERO(&it->second.cpus);
    ++it->second.pes;
    CPU_OR(&it->second.cpus, &it->second.cpus, &h.cpus);
  }
  int spinning = 0;
  for (const HostCpus& h : all) {
    const Load& load = hosts[h.host];
    spinning += spins(h.forced, load.pes, CPU_COUNT(&load.cpus)) ? 1 : 0;
  }
  return spinning;
}

void bind_to_chosen_cpu(int my_pe, bool several_nodes) {
  if (g_bind_cpu < 0) return;
  if (several_nodes && !bind_pes_of_several_nodes(g_host_pes.load(std::memory_order_relaxed),
                                                  g_host_cpus.load(std::memory_order_relaxed))) {
    return;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(g_bind_cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) {
    VSHMEM_INFO("PE %d: not bound to CPU %d (sched_setaffinity failed); waits still spin", my_pe,
                g_bind_cpu);
    return;
  }
  VSHMEM_INFO("PE %d bound to CPU %d (VSHMEM_BIND=none leaves it unbound)", my_pe, g_bind_cpu);
}

Status choose_wait_policy(Bootstrap& bootstrap) {
  HostCpus mine{};
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  mine.host = hash_name(name);
  CPU_ZERO(&mine.cpus);
  if (sched_getaffinity(0, sizeof(mine.cpus), &mine.cpus) != 0) {
    CPU_ZERO(&mine.cpus);
    CPU_SET(0, &mine.cpus);  // unknown: count one CPU, which errs on the side of yielding
  }
  // VSHMEM_WAIT=spin|yield overrides the choice (auto: by the count below).
  const std::optional<std::string> forced = env::get("VSHMEM_WAIT");
  if (forced && !forced->empty() && *forced != "auto" && *forced != "spin" && *forced != "yield") {
    return error(Code::kInvalidArgument,
                 log::format("VSHMEM_WAIT='%s' is not one of auto|spin|yield", forced->c_str()));
  }
  const std::string bind = env::text("VSHMEM_BIND");
  if (!bind.empty() && bind != "auto" && bind != "none") {
    return error(Code::kInvalidArgument,
                 log::format("VSHMEM_BIND='%s' is not one of auto|none", bind.c_str()));
  }
  mine.forced = !forced || forced->empty() || *forced == "auto" ? kWaitAuto
                : *forced == "spin"                             ? kWaitSpin
                                                                : kWaitYield;
  VSHMEM_ASSIGN_OR_RETURN(const long long look_us,
                          env::int_var("VSHMEM_WAIT_LOOK_US", 1000, 10, 100000000));
  g_data_look_ns = static_cast<uint64_t>(look_us) * 1000;
  std::vector<HostCpus> all(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mine, all.data(), sizeof(mine)));
  int pes = 0, cpus = 0;
  host_load(all, bootstrap.rank(), &pes, &cpus);
  const bool spin = spins(mine.forced, pes, cpus);
  g_spin = spin;
  const int spinning = spinning_pes(all);
  g_gathers = spinning == 0;
  g_all_spin = spinning == static_cast<int>(all.size());
  g_host_pes = pes;
  g_host_cpus = cpus;
  g_bind_cpu = spin && bind != "none" ? cpu_to_bind(all, bootstrap.rank()) : -1;
  VSHMEM_INFO(
      "waits %s: %d PEs on this host, %d CPUs in their affinity masks%s; a one-node "
      "barrier_all %s",
      spin ? "spin" : "yield the core", pes, cpus, mine.forced != kWaitAuto ? " (VSHMEM_WAIT)" : "",
      g_gathers ? "gathers at PE 0 (no PE spins)" : "disseminates (a PE spins)");
  return Status::ok();
}

bool waits_spin() { return g_spin.load(std::memory_order_relaxed); }

bool barrier_gathers() { return g_gathers.load(std::memory_order_relaxed); }

bool every_pe_spins() { return g_all_spin.load(std::memory_order_relaxed); }

namespace {
// Monotonic time before which this process's waits do not yield (a yield took long), and how long
// the next long yield keeps them from it: doubled at each long yield, back to the minimum once a
// wait is answered while it yields, so that a busy process that stays costs a time slice once a
// second at most, and one that is gone (or a PE of ours that merely computed) costs little.
std::atomic<uint64_t> g_no_yield_until_ns{0};
std::atomic<uint64_t> g_no_yield_ns{YieldPhase::kMinNoYieldNs};

// The machine's runnable tasks against this job's PEs on it, looked at every kRunnableLookNs at
// most (reading /proc/loadavg costs a few microseconds).
constexpr uint64_t kRunnableLookNs = 10'000'000;
std::atomic<uint64_t> g_runnable_looked_ns{0};
std::atomic<bool> g_others_runnable{false};

bool others_runnable(uint64_t now) {
  const uint64_t looked = g_runnable_looked_ns.load(std::memory_order_relaxed);
  if (looked != 0 && now - looked < kRunnableLookNs) {
    return g_others_runnable.load(std::memory_order_relaxed);
  }
  g_runnable_looked_ns.store(now, std::memory_order_relaxed);
  char text[128] = {};
  const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // unknown: the long-yield check still guards
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  const bool others = n > 0 && others_runnable_in(text, g_host_pes.load(std::memory_order_relaxed));
  g_others_runnable.store(others, std::memory_order_relaxed);
  return others;
}

}  // namespace

bool others_runnable_in(const char* loadavg, int host_pes) {
  // "0.52 0.58 0.59 3/467 12345": the fourth field is runnable/total scheduling entities.
  const char* p = loadavg;
  for (int field = 0; field < 3; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return false;
    ++p;
  }
  char* end = nullptr;
  const long runnable = std::strtol(p, &end, 10);
  if (end == p || *end != '/') return false;
  return runnable > host_pes;
}

void set_host_pes_for_wait(int pes) {
  g_host_pes = pes;
  g_runnable_looked_ns = 0;
}

YieldPhase::YieldPhase() {
  if (waits_spin()) return;
  const uint64_t now = monotonic_ns();
  if (now < g_no_yield_until_ns.load(std::memory_order_relaxed)) return;
  if (others_runnable(now)) return;
  start_ns_ = now;
}

bool YieldPhase::yield() {
  if (start_ns_ == 0) return false;
  const uint64_t before = monotonic_ns();
  if (!going_on(before)) return false;
  sched_yield();
  const uint64_t after = monotonic_ns();
  if (after - before >= kLongYieldNs) {
    // Another process held the core for a time slice: sleep instead, for a while.
    const uint64_t window = g_no_yield_ns.load(std::memory_order_relaxed);
    g_no_yield_until_ns.store(after + window, std::memory_order_relaxed);
    g_no_yield_ns.store(std::min(2 * window, kMaxNoYieldNs), std::memory_order_relaxed);
    start_ns_ = 0;
  }
  return true;  // the caller looks at its condition once more either way
}

void YieldPhase::answered() {
  if (start_ns_ != 0) g_no_yield_ns.store(kMinNoYieldNs, std::memory_order_relaxed);
}

uint64_t data_sleep_limit_ns() { return g_data_look_ns.load(std::memory_order_relaxed); }

}  // namespace vshmem::detail
