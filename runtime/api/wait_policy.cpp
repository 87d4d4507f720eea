#include "runtime/api/wait_policy.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

std::atomic<bool> g_spin{false};
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

void bind_to_chosen_cpu(int my_pe) {
  if (g_bind_cpu < 0) return;
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
  VSHMEM_ASSIGN_OR_RETURN(const long long look_us,
                          env::int_var("VSHMEM_WAIT_LOOK_US", 1000, 10, 100000000));
  g_data_look_ns = static_cast<uint64_t>(look_us) * 1000;
  std::vector<HostCpus> all(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mine, all.data(), sizeof(mine)));
  int pes = 0, cpus = 0;
  host_load(all, bootstrap.rank(), &pes, &cpus);
  const bool spin = forced && *forced == "spin"    ? true
                    : forced && *forced == "yield" ? false
                                                   : pes <= cpus;
  g_spin = spin;
  g_bind_cpu = spin && bind != "none" ? cpu_to_bind(all, bootstrap.rank()) : -1;
  VSHMEM_INFO("waits %s: %d PEs on this host, %d CPUs in their affinity masks%s",
              spin ? "spin" : "yield the core", pes, cpus,
              forced && *forced != "auto" ? " (VSHMEM_WAIT)" : "");
  return Status::ok();
}

bool waits_spin() { return g_spin.load(std::memory_order_relaxed); }

uint64_t data_sleep_limit_ns() { return g_data_look_ns.load(std::memory_order_relaxed); }

}  // namespace vshmem::detail
