// The state of an initialized library, owned by the api layer. Everything below it is reached
// through here. Thin rules for the entry points: validate, translate, dispatch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/api/job_watch.hpp"
#include "runtime/api/peer_watch.hpp"
#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/clock.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/status.hpp"
#include "runtime/heap/data_segment.hpp"
#include "runtime/heap/multicast_region.hpp"
#include "runtime/heap/symmetric_heap.hpp"
#include "runtime/ipc/fd_passing.hpp"
#include "runtime/memory/memory.hpp"
#include "runtime/transport/device_proxy.hpp"
#include "runtime/transport/host_wake.hpp"
#include "runtime/transport/proxy_ring.hpp"
#include "runtime/transport/transport.hpp"
#include "vshmem/device/impl/state.h"

namespace vshmem::detail {

struct Runtime {
  // Declaration order is teardown order reversed: the heap goes before the handle exchange,
  // the provider and the bootstrap it was agreed over.
  std::unique_ptr<Bootstrap> bootstrap;
  Topology topology;
  std::unique_ptr<PeerWatch> peer_watch;  // node-local peers' processes
  JobIdentity job;
  std::unique_ptr<MemoryProvider> provider;
  // The device proxy's request ring, made by publish_device_state when device code has a peer it
  // cannot map; freed once the device state no longer names it (shmem_finalize), before the
  // provider.
  std::unique_ptr<ProxyRing> proxy_ring;
  TransportPlan plan;
  std::unique_ptr<FdExchange> fd_exchange;
  std::unique_ptr<SymmetricHeap> heap;
  // The program's global and static variables (symmetric too; reached through the transport).
  DataSegment statics;
  // Every PE's path (mapped or remote) and what this PE can do locally. Goes before the heap it
  // reaches.
  std::unique_ptr<Transport> transport;
  // The world's multicast region over the heap; null when multicast is off (the default).
  std::unique_ptr<MulticastRegion> multicast;
  // VSHMEM_ENABLE_MULTICAST=1: team splits try a region for each new team smaller than the world
  // (runtime/api/team.cpp), whether or not the world got one.
  bool multicast_enabled = false;

  int my_pe = -1;
  int n_pes = 0;
  int thread_level = 0;
  // Collective allocations made (heap_api.cpp: their arguments are compared across the node).
  std::atomic<uint64_t> allocations{0};

  // Runtime-internal symmetric memory (barrier counters, device sync area).
  uint64_t* barrier_counters = nullptr;  // kBarrierRounds counters
  uint64_t barrier_epoch = 0;
  void* device_sync = nullptr;
  size_t device_sync_bytes = 0;

  // The device state's tables in the heap (runtime/api/device_state.cpp: device_tables_bytes),
  // and what was last written there.
  void* device_tables = nullptr;
  std::vector<unsigned char> device_tables_written;
  bool device_mps = false;  // an MPS server serves the heap's GPU

  // The proxy thread that drains the request ring (proxy_ring, or a test's) into the remote path
  // (device calls to PEs this GPU cannot map); null when there is no ring. Stopped before the
  // transport.
  std::unique_ptr<ProxyBackend> proxy_backend;
  std::unique_ptr<DeviceProxy> device_proxy;
  // Last: stopped before anything it looks at goes (shmem_finalize stops it first).
  std::unique_ptr<JobWatch> watch;
};

// Stops the device proxy (shmem_finalize, before the transport goes).
void stop_device_proxy(Runtime& rt);

constexpr int kBarrierRounds = 32;
constexpr size_t kDeviceSyncBytes = 1 << 20;

// Zeroes an internal object that shmem_init allocated in its new heap, where nothing has been
// written yet: nothing to do where the provider's new memory reads as zero (host memory).
Status clear_init_object(Runtime& rt, void* p, size_t bytes);

// The live runtime, or null outside shmem_init .. shmem_finalize.
extern Runtime* g_runtime;

// For entry points: the runtime, or a fatal error naming the call when not initialized.
Runtime& runtime_for(const char* call);

// Fatal error in an entry point whose specification gives no error return: prints
// "vshmem: PE n: <call>: <cause>" and ends the whole job (shmem_global_exit(1)).
[[noreturn]] void fail(const char* call, const Status& status);
[[noreturn]] void fail(const char* call, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Validation shared by the entry points.
inline void check_pe(Runtime& rt, int pe, const char* call) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.n_pes)) {
    fail(call, "PE %d is not a valid PE (the job has PEs 0..%d)", pe, rt.n_pes - 1);
  }
}
// The object at addr is symmetric: inside the heap's memory in use, or a global or static
// variable of the program.
void check_symmetric(Runtime& rt, const void* addr, size_t bytes, const char* call,
                     const char* which);

// Host-side data movement to/from a PE's copy of a symmetric object, through that PE's path
// (runtime/transport). The blocking forms complete before they return; the _nbi ones at quiet.
void rma_put(Runtime& rt, void* dest, const void* source, size_t bytes, int pe, const char* call);
void rma_get(Runtime& rt, void* dest, const void* source, size_t bytes, int pe, const char* call);
void rma_put_nbi(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                 const char* call);
void rma_get_nbi(Runtime& rt, void* dest, const void* source, size_t bytes, int pe,
                 const char* call);
uint64_t rma_atomic(Runtime& rt, AtomicRequest request, int pe, const char* call);

// The pause of a host-side wait loop. It spins (CPU pause) while the PEs of this machine do not
// outnumber their CPUs, else it yields the core after a few spins (runtime/api/wait_policy.hpp);
// a wait that lasts longer than a few tens of milliseconds naps instead, to leave the core to
// work that needs it. A wait that lasts checks now and then that the node-local peers are alive
// (runtime/api/peer_watch.hpp): when one has exited, the loop gets one more look at its
// condition (what the peer did before it exited is visible by then), and if it is still unmet,
// the call fails naming the peer.
//
// Waits whose writers wake this PE after their store (the collectives' signals and the node
// barrier's counters, on one node: runtime/transport/host_wake.hpp) pass `own`, this PE's wake
// word, and poll with pause(met): instead of yielding or napping, such a wait sleeps on the word
// and is woken by the store it waits for. When PEs outnumber the cores the barrier and collective
// waits first yield while yielding hands the core to this job's PEs (YieldPhase,
// wait_policy.hpp), then sleep: the core goes to the PE it waits for, and the wake gives it back
// at once. When they do not, it spins as pause() does and sleeps where pause() would nap.
class Backoff {
 public:
  explicit Backoff(const char* call) : call_(call) {}
  // over_network: what we wait for arrives as a network message (tens of microseconds at best),
  // so past the first spins the wait yields the core whatever the wait policy: a spinning PE on a
  // busy machine keeps its peer (or its own progress thread) from running, and a yield costs
  // nothing next to the message.
  Backoff(const char* call, bool over_network) : call_(call), over_network_(over_network) {}
  // Over the network, and every write to what we wait for arrives through `sleeper` (a barrier
  // counter that one remote peer signals): past the first spins the wait sleeps until the
  // network has a message for us, instead of yielding or napping (the kernel wakes it when the
  // message arrives). Where waits spin it is the wait on remote data below, each sleep at most
  // kBarrierSleepNs: it spins (the caller's loop moves the network) for kNetworkSleepAfterNs
  // first, and its sleeps poll while messages keep coming (kNetworkSpinUs).
  Backoff(const char* call, RemotePath* sleeper);
  // On this node, and the writers wake `own` after their store (host_wake.hpp): see pause(met).
  // Each sleep lasts sleep_limit_ns at most. When PEs outnumber the cores the wait yields the
  // core first_yields times before its first sleep (the waits on data: a put answered within a
  // few yields costs no futex wake; see kDataFirstYields).
  Backoff(const char* call, WakeWord own, uint64_t sleep_limit_ns = kSleepLimitNs,
          unsigned first_yields = 0)
      : call_(call), own_(own), sleep_limit_ns_(sleep_limit_ns), first_yields_(first_yields) {}
  // A wait on data that only remote peers write (Transport::sole_writers_path): it polls as any
  // wait does, and once it has lasted kNetworkSleepAfterNs it sleeps until `network` has a
  // message for us (their puts' wake messages, signals, target ops), sleep_limit_ns at most at a
  // time (a write the network does not announce, a store of our own GPU's kernels, is then seen
  // within that). Only long waits sleep: a message-length wait that ended in a kernel wake-up
  // made a TCP put/wait_until ping-pong 2-4x slower (session 8).
  Backoff(const char* call, RemotePath* network, uint64_t sleep_limit_ns)
      : call_(call), late_sleeper_(network), sleep_limit_ns_(sleep_limit_ns) {}
  // A long wait published for the deadlock watch (runtime/api/deadlock.hpp) takes itself back.
  ~Backoff() {
    if (published_ != 0) end_published();
  }
  Backoff(const Backoff&) = delete;
  Backoff& operator=(const Backoff&) = delete;
  void pause();
  // For a wait with a wake word: met() re-reads the condition (acquire), so that a sleep never
  // begins after the store it waits for.
  template <typename Met>
  void pause(Met&& met) {
    if (!own_ || !sleep_next()) {
      pause();
      return;
    }
    own_.sleep_unless(met, sleep_limit_ns_);
    after_sleep();
  }

  // A sleep's time limit: only a dead peer (watched every second) or a writer that does not wake
  // (none should) lets it run out.
  static constexpr uint64_t kSleepLimitNs = 100'000'000;
  // Yields before a wait on data (shmem_wait_until, the lock) sleeps, when PEs outnumber the
  // cores. Measured (bench/RESULTS.md, issue #15 session 6; 4 PEs on 2 cores, put/wait_until
  // ping-pong, medians): 0 yields 12.6 us quiet / 183 us with a busy process, 16 yields 8.5 / 4.5,
  // 64 yields 11.4 / 115, the yield loop without sleep 10.0 / 484, OSHMEM 15.9 / 281. The yields
  // also end after 50 us (runtime.cpp: kYieldPhaseNs), since on a loaded machine one yield can
  // last a time slice: then 8.8 / 5.5 against the old loop's 10.5 / 5.4 and OSHMEM's 23 / 1539.
  static constexpr unsigned kDataFirstYields = 16;
  // How long a wait on data written only by remote peers polls before it sleeps in the network's
  // wait: far above a message's round trip (1-100 us), so that no ping-pong leg ends in a sleep.
  static constexpr uint64_t kNetworkSleepAfterNs = 1'000'000;
  // Where waits spin, how long past the network's last message such a sleeping wait polls before
  // it sleeps again (RemotePath::wait_event's spin_us): longer than the gap between a peer's
  // back-to-back requests over TCP (20-100 us), so that a PE serving them in a long wait answers
  // each without the kernel's wake-up, which cost 40-75 us per 8-byte get and fetch_add on the
  // 2-core VM (bench/RESULTS.md, issue #13 session 12).
  static constexpr int kNetworkSpinUs = 1000;
  // A barrier's sleep in the network's wait lasts this long at most: the bound covers a missed
  // wake-up.
  static constexpr uint64_t kBarrierSleepNs = 8'000'000;

 private:
  bool sleep_next();              // whether this pause sleeps on own_
  void late_sleep(uint64_t now);  // one sleep in late_sleeper_'s wait (see its constructor)
  void after_sleep();             // the peer watch, once the wait is a long one
  void watch_peers();
  void end_published();
  const char* call_;
  bool over_network_ = false;
  RemotePath* sleeper_ = nullptr;
  RemotePath* late_sleeper_ = nullptr;  // see the constructor
  bool late_sleeping_ = false;          // past kNetworkSleepAfterNs: every pause sleeps there
  WaitSleeps own_{WakeWord{}};          // registered from its first sleep until the wait ends
  uint64_t sleep_limit_ns_ = kSleepLimitNs;
  unsigned first_yields_ = 0;  // when PEs outnumber the cores: yields before the first sleep
  unsigned spins_ = 0;
  unsigned naps_ = 0;
  uint64_t since_ns_ = 0;    // when the wait stopped being short (monotonic clock)
  uint64_t watched_ns_ = 0;  // the last peer watch of a sleeping wait
  bool sleeping_ = false;    // past the spins: every pause(met) sleeps
  int exited_ = -1;          // a peer seen gone at the previous pause
  uint64_t published_ = 0;   // the deadlock watch's token for this wait; 0: not published
};

// Completes this PE's outstanding transfers (shmem_quiet) / orders them (shmem_fence).
void quiet(Runtime& rt, const char* call);
void fence(Runtime& rt, const char* call);
// quiet before a release store that the peers acquire (Transport::quiet_before_release).
void quiet_before_release(Runtime& rt, const char* call);

// One atomic read of a word of our own heap that peers update.
template <typename T>
T read_own(Runtime& rt, const T* addr, const char* call) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  uint64_t bits = 0;
  Status st = rt.transport->read_own(addr, sizeof(T), &bits);
  if (!st) fail(call, st);
  T value;
  __builtin_memcpy(&value, &bits, sizeof(T));  // little-endian: the low bytes hold the value
  return value;
}

// Job-wide barrier without the quiet (shmem_sync_all) and with it (shmem_barrier_all).
void sync_all(Runtime& rt, const char* call);

// Builds the device state (vshmem/device/impl/state.h) from the heap, the transport plan and the
// team table, writes its tables into the heap and hands it to the device library, if one is
// linked (runtime/api/device_state.cpp). Holds device_state_mutex() meanwhile.
void publish_device_state(Runtime& rt);
// Held while the device state is rebuilt, and by whoever changes what it describes (the team
// table), so that threads calling heap and team functions at once never hand the device library
// a team being torn down.
std::mutex& device_state_mutex();
// Bytes of the device state's tables for n_pes PEs (the heap block shmem_init allocates for
// them: peer deltas, team table, teams' members).
size_t device_tables_bytes(int n_pes);
// Whether the device library registered itself (it does when it is loaded, before main): the
// program has device code, and the heap's default backend is GPU memory.
bool device_library_linked();
// shmem_init: an error naming both when the linked device library was built for another device
// state (version or size) than this libvshmem builds.
Status check_device_library();
// The device proxy's thread on rt.proxy_ring, or on the ring a test gave
// (vshmemi_set_device_proxy); nothing when there is neither (runtime/api/runtime.cpp).
void start_device_proxy(Runtime& rt);

}  // namespace vshmem::detail

struct vshmem_ctx_s;
namespace vshmem::detail {
// The world PE number for PE `pe` of the context's team (contexts created from a team address
// PEs by their number in that team). Fails the job for an invalid context or PE.
int ctx_pe(struct ::vshmem_ctx_s* ctx, int pe, const char* call);
}  // namespace vshmem::detail
