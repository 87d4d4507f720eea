// The proxy thread of a PE (DESIGN.md, transport): drains the request ring that device code
// fills for the PEs it cannot map (vshmem/device/impl/proxy_ring.h) into the remote path.
//
// One thread per PE handles the ring's tickets in order, so requests to one PE are performed in
// the order their producers took tickets; fence and quiet requests call the transport's fence and
// quiet, a signal request first completes every earlier request (data before signal); a barrier's
// notification (kFlagNotify) then goes one-way. Local memory that is not in the slot (a large
// put's source, a large get's destination: GPU memory) goes to a path that stages it itself
// (ProxyBackend::path_stages_local: the remote path, pipelined) in one call, else it is staged
// through the proxy's own host buffer with the copy the device library gives. While requests
// come, the thread polls the ring and moves the network in turn (ProxyBackend::progress).
//
// A failed request never leaves the proxy waiting: it answers the producer with the error, records
// the first failure in the ring's control block (producers stop waiting for slots) and answers
// every later request with the same failure. stop() returns within one poll interval even when a
// producer took a ticket and never published it (a trapped kernel).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/transport/peer_path.hpp"
#include "vshmem/device/impl/proxy_ring.h"

namespace vshmem {

// What the proxy drives: the peer paths, the transport's fence and quiet, and copies between the
// proxy's host buffers and local (GPU) memory.
class ProxyBackend {
 public:
  virtual ~ProxyBackend() = default;
  virtual PeerPath* path(int pe) = 0;  // null for an invalid PE
  virtual Status fence() = 0;
  virtual Status quiet() = 0;
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // Whether path(pe) takes local GPU memory itself (it stages it through its own pipelined host
  // buffers, as the remote path does): then a large put or get goes to it in one call, from and
  // to the producer's buffer, instead of piece by piece through the proxy's stage buffer.
  virtual bool path_stages_local(int /*pe*/) { return false; }
  // Moves the network once without blocking, performing what peers asked of this PE (their puts
  // and atomics on our heap, which our own kernels may be polling for). The proxy thread calls it
  // while it polls the ring, so that a peer's request is served at once instead of after the
  // network's progress thread wakes up.
  virtual void progress() {}
};

class DeviceProxy {
 public:
  // stage_bytes: the proxy's host buffer for requests whose data is not in the slot; `stage`
  // (pinned memory, for fast copies to and from the GPU) or, when null, a buffer of its own.
  DeviceProxy(const proxy::RingView& ring, ProxyBackend& backend, int my_pe,
              size_t stage_bytes = size_t{1} << 20, void* stage = nullptr);
  ~DeviceProxy();
  DeviceProxy(const DeviceProxy&) = delete;
  DeviceProxy& operator=(const DeviceProxy&) = delete;

  // Starts / stops the thread. stop() answers the requests left in the ring with kErrStopped.
  void start();
  void stop();

  // Handles the published requests at the head of the ring (what the thread does in a loop; the
  // unit tests call it directly). Returns how many it handled.
  size_t poll();

  // Completes, for a host thread, every request published before the call: waits (at most the
  // ring's time limit, VSHMEM_PROXY_TIMEOUT) until the proxy handled them and quieted the transport
  // behind them. What host shmem_quiet and shmem_barrier_all do after a kernel's device calls to
  // unmapped PEs (the kernel's requests may still be in the ring when the host synchronized with
  // the kernel). When nothing published waits in the ring and the proxy thread is not handling a
  // request, it returns at once (an earlier failure still reported): what the proxy handled went
  // to the transport, which the caller quiets next (api/sync.cpp), so no round trip to a thread
  // that may be napping.
  Status drain();

  // The first failure's message, empty while none ("" also when none happened).
  std::string failure() const;

  // Where the proxy's time goes, per kind of request (proxy::Op): how many it handled and the time
  // from taking one up to answering it (the remote path's share of a device call's latency; the
  // rest is the device's posting, the proxy's poll and the answer's way back). Printed at
  // VSHMEM_DEBUG=info when the proxy stops.
  struct OpTimes {
    uint64_t count = 0;
    uint64_t total_ns = 0;
    uint64_t max_ns = 0;
  };
  // Index: proxy::Op (0 unused); puts and gets whose data travels in the request apart from the
  // larger ones, at kInlinePut / kInlineGet.
  static constexpr uint32_t kInlinePut = 7, kInlineGet = 8;
  static constexpr uint32_t kOpKinds = 9;
  OpTimes times(uint32_t kind) const;
  std::string times_summary() const;
  uint64_t handled() const { return head_; }

 private:
  void run();
  int32_t handle(proxy::Slot& slot);
  int32_t fail(int32_t code, int pe, uint64_t ticket, const std::string& message);
  template <class PathFailed, class CopyFailed>
  int32_t staged_put(PeerPath& path, int pe, unsigned char* dest, const unsigned char* source,
                     uint64_t bytes, const PathFailed& path_failed, const CopyFailed& copy_failed);
  template <class PathFailed, class CopyFailed>
  int32_t staged_get(PeerPath& path, int pe, unsigned char* dest, const unsigned char* source,
                     uint64_t bytes, const PathFailed& path_failed, const CopyFailed& copy_failed);
  void retire();
  Status drain_here();
  bool idle() const;  // for other threads: nothing published waits, no request is being handled

  // How long a request or a CUDA call may take before the stall watch reports it: well below the
  // time limits of the peers' waits (VSHMEM_PROXY_TIMEOUT, VSHMEM_BOOTSTRAP_TIMEOUT: 60 s).
  static constexpr std::chrono::milliseconds kStallReport{5000};

  proxy::RingView ring_;
  ProxyBackend& backend_;
  int my_pe_;
  std::vector<unsigned char> own_stage_;
  unsigned char* stage_;
  size_t stage_bytes_;
  uint64_t head_ = 0;                  // next ticket to handle
  uint64_t retired_ = 0;               // == control->consumed
  std::vector<uint8_t> awaiting_ack_;  // per slot: handled, its producer has not acknowledged
  int32_t failed_ = 0;
  mutable std::mutex failure_mutex_;
  std::string failure_;
  std::atomic<bool> stop_{false};
  bool watching_ = false;  // this proxy started the stall watch
  mutable std::mutex times_mutex_;
  OpTimes times_[kOpKinds];
  // For idle(): head_, stored once the request before it is handled.
  std::atomic<uint64_t> head_seen_{0};
  // drain(): a host thread asks (drain_asked_), the proxy thread answers once the ring is empty
  // and the transport quieted (drain_done_, drain_status_ under drain_mutex_).
  std::atomic<uint64_t> drain_asked_{0};
  std::atomic<uint64_t> drain_done_{0};
  std::mutex drain_mutex_;
  Status drain_status_;
  std::thread thread_;
};

}  // namespace vshmem
