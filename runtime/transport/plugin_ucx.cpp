// The remote path on UCX (ucp): a plugin that libvshmem loads with dlopen (plugin_abi.h), so that
// libvshmem never links UCX. UCX picks shared memory, TCP or RDMA verbs at run time (UCX_TLS).
//
// One worker per PE, thread mode MULTI: application threads issue and wait on their own requests
// (they progress the worker while they wait); a progress thread sleeps on the worker's event fd
// and moves the network while the application computes or waits on its own memory, and performs
// the operations that peers ask this PE to do ("target ops", below). Worker addresses are
// exchanged at init over the bootstrap; endpoints are created on first use, with peer error
// handling, so that a dead peer fails the calls to it instead of hanging them (over TCP, where
// such an endpoint has no zero-copy put, a second endpoint without it carries the operations and
// the first one watches the peer: make_data_ep()); and no wait lasts longer than the time limit.
// An endpoint is handed out only once it is wired up (see connect()): no operation of ours is
// ever queued on a transport connection that is still being set up.
//
// The heap is registered chunk by chunk as it grows (ucp_mem_map), and the rkeys are exchanged in
// the same collective step (add_region). Put and get use ucp_put_nbx / ucp_get_nbx into
// registered memory; atomics use ucp_atomic_op_nbx on a host heap. Puts to a peer reached over
// one TCP connection are our own messages instead, performed on receipt and confirmed at quiet
// (kPutMessageMax, post_put()): UCX's emulated put has its target answer every fragment. Gets of
// 8 KiB or more from such a peer are our own request, answered by the peer from its heap in eager
// messages of up to 1 MiB (kGetMessageMax, get_by_messages()): UCX's emulated get is answered in
// fragments of 8 KiB.
//
// Target ops: when a peer's heap is GPU memory, the network may not reach it (UCX without CUDA
// support, or the registration refused) and network atomics would not be atomic with respect to
// the GPU's own atomics. Then the operation travels as an active message to the target's
// progress thread, which performs it with the memory provider (copies staged through host
// buffers on both sides, chunks pipelined: chunk_pipeline.hpp; atomics with the provider's atomic,
// so atomic with respect to device atomics).
//
// Direct staging (same host): a staged chunk's bytes need not travel in UCX messages when the
// target can map the initiator's staging buffers. The initiator's buffers are one segment that
// UCX allocates (ucp_mem_map, UCP_MEM_MAP_ALLOCATE: shared memory where UCX has a shared-memory
// transport), registered with the memory provider (page-locked for the GPU's copy engines); its
// rkey goes to the target once (TargetOp::kAttach), and the target asks ucp_rkey_ptr for a
// pointer to it, which UCX gives only where it has a shared-memory mapping of that memory (a
// peer on the same host; between real nodes it refuses, and the chunks travel as before). The
// target registers the mapped segment with its provider too, and from then on its copy reads a
// put's chunk straight from the initiator's buffer and writes a get's chunk straight into it: the
// messages carry only where (RequestHeader::direct). Over shared memory every byte otherwise
// crossed between the processes by host-thread copies (UCX's FIFO fragments, or cma), at about
// 5 GB/s per thread on the H200 host, where the copy engines move 50+ GB/s.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <ucs/config/global_opts.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/common/hot.hpp"
#include "runtime/transport/chunk_pipeline.hpp"
#include "runtime/transport/plugin_abi.h"
#include "runtime/transport/shared_completion.hpp"
#include "runtime/transport/ucx_status.hpp"
#include "runtime/transport/worker_lock.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using vshmem::ChunkPipeline;
using vshmem::SharedCompletion;

// vshmem::Code values (runtime/common/status.hpp), which the ABI returns.
constexpr int kInvalidArgument = 1;
constexpr int kUnsupported = 3;
constexpr int kTimeout = 4;
constexpr int kPeerFailure = 5;
constexpr int kSystem = 6;

constexpr uint64_t kStatic = VSHMEM_TRANSPORT_STATIC_SEGMENT;
// What UCX may use when it serves only the global and static variables of one node's PEs.
constexpr char kStaticsOnlyTls[] = "posix,cma,self";

constexpr uint16_t kAmRequest = 17;
constexpr uint16_t kAmReply = 18;
// The first message on a new endpoint (see connect()): the peer drops it.
constexpr uint16_t kAmHello = 19;
// A signal (signal_add): SignalHeader, performed on receipt, not answered.
constexpr uint16_t kAmSignal = 20;
// After our network puts to a peer completed (quiet): the peer drops it, but its arrival wakes a
// wait there that sleeps in the network's wait (wait_event) for data our puts wrote into its
// memory without any event of its own (RDMA, cross-memory copies).
constexpr uint16_t kAmWake = 21;
constexpr int64_t kWakeGapNs = 1'000'000;  // see send_wakes()
// Put messages (UcxPath::post_put, VSHMEM_UCX_PUT_MESSAGES): a put to a peer whose endpoint is
// one TCP connection travels as our own active messages of up to this many bytes (kAmRequest,
// TargetOp::kPut without a token, always eager), which the peer copies into its heap on receipt
// and does not answer. UCX emulates a put over TCP with active messages too (TCP has no short or
// bcopy put), but its target answers every fragment of 8 KiB (the completions its flush
// counts): a send per fragment on the target. On the 2-core box over loopback (UCX 1.13), with
// messages: blocking 8-byte puts 0.84x the time, put bandwidth 4.2 GB/s at 1 MiB and 2.5 at 64 MiB
// against 0.98 and 0.49 (bench/RESULTS.md, issue #13 session 23); not so with UCX 1.16's TCP put
// (zero copy, no answer per fragment): see init() for the default. quiet() confirms them: one
// 1-byte get per peer that got some, which the peer answers after every message before it on
// the same connection (hence one connection: UCX spreads a multi-lane endpoint's traffic).
constexpr size_t kPutMessageMax = 1 << 20;
// Get messages (UcxPath::get_by_messages, VSHMEM_UCX_GET_MESSAGES): a get of at least
// kGetMessageMin bytes from a peer whose endpoint is one TCP connection (host heaps) asks with our
// own request (kAmRequest, TargetOp::kGet, kReplyEager) for up to kGetMessageMax bytes at a
// time, kGetMessageDepth requests in flight (an _nbi get: all of them, completed at quiet by
// complete_nbi_gets()); the peer answers in its message callback with one
// eager message sent from its heap, which we copy into the destination on arrival. UCX 1.13
// emulates a get over TCP with messages too, but answers in fragments of 8 KiB, each its own
// send. UCX 1.13 on the 2-core box: messages got 2.9 GB/s at 1 MiB against 0.97, 1.28x at 8 KiB;
// below 8 KiB UCX's get was 1.03x faster, and at 8 bytes 1.04x. UCX 1.16 on the H200's host:
// 1.48x at 16 KiB, 1.24x at 64 MiB, 0.95 [0.83, 1.07] at 1 MiB (bench/RESULTS.md, issue #13
// session 24).
constexpr size_t kGetMessageMin = 8 << 10;
constexpr size_t kGetMessageMax = 1 << 20;
// Where UCX is newer than 1.13, a get of less than kGetMessageDepth * kGetMessageMax bytes is cut
// into kGetMessageDepth messages of at least this many bytes, all in flight at once: the copy of
// one reply into the destination overlaps the transfer of the next. UCX 1.16 on the H200's host,
// blocking gets of 1 MiB: 4 messages of 256 KiB 1.63 GB/s, one of 1 MiB 1.21, UCX's get 1.34,
// OSHMEM 1.33 (bench/RESULTS.md, issue #13 session 25); UCX 1.13 on the 2-core box: cut in four,
// 1 MiB 3.44 against 3.61 GB/s, 256 KiB 2.32 against 2.87 (session 24): not there.
constexpr size_t kGetMessageSplitMin = 256 << 10;
constexpr int kGetMessageDepth = 4;
// Target ops: bytes per active message, and chunks in flight per transfer (defaults of
// VSHMEM_UCX_CHUNK_KIB and VSHMEM_UCX_CHUNKS). Every chunk holds a page-locked bounce buffer on
// each side from its first step to its last (chunk_pipeline.hpp, run_staged).
constexpr size_t kStageChunk = 512 << 10;
constexpr int kStageDepth = 8;
// Direct staging: the most our staging segment (own_segment()) takes.
constexpr size_t kSegmentMax = size_t{256} << 20;
// Data up to this size travels in the active message itself (UCP_AM_SEND_FLAG_EAGER: one
// message, copied out on receipt); larger payloads let UCX choose, which is rendezvous for staged
// chunks (the receiver fetches the bytes straight into its staging buffer: over shared memory
// one cross-memory copy instead of fragments copied in and out of UCX's buffers).
constexpr size_t kEagerMax = 16 << 10;
// After the last message it handled, the progress thread (and a PE waiting in wait_event) keeps
// polling this long before it arms the worker and sleeps: a request that follows within it (the
// next chunk of a staged transfer, the next operation of a caller waiting for our reply) is taken
// at once instead of after a wake-up from epoll, which costs tens of microseconds. Only where the
// CPUs this PE may run on are at least four times the node's PEs (each has an application thread
// and a progress thread, and other work shares the machine): on a busy machine the spin takes the
// core from the thread that would send the next message (2 cores at load 15: 8-byte get over TCP
// 31 -> 115 us with the spin, bench/RESULTS.md). VSHMEM_UCX_SPIN_US overrides (0: never spin).
constexpr int kIdleSpinUs = 50;
// The progress thread stays off the worker while the application progressed it within the last
// hand-off window, or called into it to post an operation. Where the CPUs are at least four times
// this node's PEs (as for kIdleSpinUs), the thread wakes every kHandoffMs to look. Elsewhere a
// wake-up takes the core from an application thread for a moment (at 1 ms, 4% of an 8-byte get
// over TCP on the 2-core box; every 8 ms, the sleeps' bound before session 25, about 1%): there
// it sleeps on a deadline (a timerfd) that the application pushes kHandoffFedMs ahead while it
// polls, at most once every quarter of that (a system call of about 2 us: 0.1% of the polling
// thread's time), and wakes only once the application has not pushed it for a window. The slack
// covers an application thread that shares its core with other work (2 PEs and 2 busy processes
// on the 2-core box: a deadline of 4 ms pushed every 2 ms was missed every 6.5 ms). The cost: a
// peer's request that arrives after the application stopped polling (an atomic performed here, a
// staged transfer) waits for the rest of the window, as long as the longest sleep before.
constexpr int kHandoffMs = 1;
constexpr int kHandoffFedMs = 8;
constexpr std::chrono::milliseconds kHandoffPushEvery{kHandoffFedMs / 4};
constexpr int kHandoffFirstMs = 3;
// How many polls of the application between two looks at the clock for that deadline.
constexpr unsigned kHandoffCheckEvery = 16;
// The parameters of a network put or get, built once (not zeroed on every operation). A blocking
// put waits for local completion only (the quiet pays the remote one): it asks UCX for the
// protocol that completes locally soonest, where UCX has a choice. FAST_CMPL is a bit of
// op_attr_mask, not an operation flag (`flags`, where this plugin passed it before session 22:
// UCX never saw it).
constexpr ucp_request_param_t kNoRequestParams{};
constexpr ucp_request_param_t fast_completion() {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FLAG_FAST_CMPL;
  return param;
}
constexpr ucp_request_param_t kFastCompletion = fast_completion();
// An application thread that posts operations without waiting for them (blocking puts that
// complete locally at once, signals) progresses the worker itself once kIssueProgressGap has
// passed since it last did: the progress thread is off the worker meanwhile (kHandoffMs), and the
// acknowledgements and peers' requests still get read, no later than they would by the progress
// thread after its first sleep. The clock is read once per kIssueCheckEvery posts. A bound in
// time, not in posts: with a fixed count (every 32 posts, before) how long a peer's request
// waited depended on how fast the network takes posts (7 us each over TCP on the 2-core box, 0.6
// us over shared memory). Both forms cost the same per put there (bench/RESULTS.md, issue #13
// session 20), with fewer progress calls (over TCP one per about 140 puts instead of 32).
constexpr unsigned kIssueCheckEvery = 16;
constexpr std::chrono::microseconds kIssueProgressGap{1000};
// At finalize, how long we wait for our last operations and endpoint closes (peers may be gone).
constexpr std::chrono::seconds kCloseWait{2};

// kAttach: the requester's staging segment (direct staging): operand is its address in the
// requester's address space, compare its length, and the data its packed rkey.
enum class TargetOp : uint32_t { kPut = 1, kGet = 2, kAtomic = 3, kAttach = 4 };

struct RequestHeader {
  uint32_t op;  // TargetOp
  int32_t from_pe;
  uint64_t token;
  uint64_t offset;
  uint64_t bytes;
  uint64_t operand;
  uint64_t compare;
  uint32_t amo;
  uint32_t width;
  // A put's or get's chunk in the requester's staging segment (direct staging): its offset there
  // + 1; 0: a put's data travels in the message and a get's in the reply. Defaulted, so that
  // requests built without it (atomics, signals) need not name it.
  uint64_t direct = 0;
  uint32_t flags = 0;  // kReplyEager
  uint32_t reserved = 0;
};
// RequestHeader::flags: the reply travels eagerly whatever its size (a get message: the reply's
// bytes are copied straight into the caller's buffer on arrival, no rendezvous).
constexpr uint32_t kReplyEager = 1;

// As small as it can be: a barrier round is one such message.
struct SignalHeader {
  uint64_t offset;  // in the target's heap
  uint64_t value;   // added to the 8-byte word there
  int32_t from_pe;  // for the error message, should it fail
  uint32_t reserved;
};

struct ReplyHeader {
  uint64_t token;
  int32_t status;  // 0, or a vshmem::Code; the data is then the error text
  uint32_t reserved;
  uint64_t value;
};

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

int set_err(char* err, size_t errlen, int code, const std::string& text) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", text.c_str());
  return code;
}

// An atomic on our own host memory (global and static variables), with the CPU's atomics: the
// same instructions the program uses on its own variables.
template <typename T>
uint64_t cpu_atomic(int op, void* address, uint64_t operand, uint64_t compare) {
  T* p = static_cast<T*>(address);
  const T v = static_cast<T>(operand);
  switch (op) {
    case VSHMEM_TRANSPORT_AMO_FETCH: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case VSHMEM_TRANSPORT_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;
    case VSHMEM_TRANSPORT_AMO_SWAP: return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
    case VSHMEM_TRANSPORT_AMO_CSWAP: {
      T expected = static_cast<T>(compare);
      __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return expected;
    }
    case VSHMEM_TRANSPORT_AMO_FETCH_ADD: return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    case VSHMEM_TRANSPORT_AMO_FETCH_AND: return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    case VSHMEM_TRANSPORT_AMO_FETCH_OR: return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    default: return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
  }
}

// One operation of ours that a peer's progress thread performs: the reply lands here.
struct PendingOp {
  std::atomic<bool> done{false};
  int status = 0;
  uint64_t value = 0;
  std::string text;
  void* data = nullptr;  // get: where the reply's bytes go (a host bounce buffer)
  size_t bytes = 0;
  // A get message's: its reply must come eagerly (kReplyEager); a rendezvous reply is refused
  // (its data would land after the caller may have given up on it).
  bool eager_only = false;
  // Not UCS_OK: UCX failed to send the op's request (no reply will come).
  ucs_status_t send_status = UCS_OK;
};

// A get message in flight (UcxPath::send_get_message): the reply's bytes go straight to the
// destination (op.data). token is 0 once the reply has arrived (on_reply took the op off the
// table). One that goes while its reply is still out (a failure or the time limit ended the
// wait) forgets its op: a late reply finds no one (the reply's bytes are copied under
// ops_mutex_, so none land after forget_op() returns).
struct GetMessage {
  GetMessage() = default;
  GetMessage(const GetMessage&) = delete;
  GetMessage& operator=(const GetMessage&) = delete;
  ~GetMessage();
  PendingOp op;
  uint64_t token = 0;
  int pe = -1;
  class UcxPath* path = nullptr;
};

// A request a peer sent us, to be performed by the progress thread.
struct Work {
  RequestHeader header{};
  const void* data = nullptr;      // points into staged or owned
  std::shared_ptr<void> staged;    // a staging buffer (given back to the pool when released)
  std::vector<uint8_t> owned;      // data larger than a staging buffer
  class UcxPath* owner = nullptr;  // while a rendezvous receive fills it
  // Staged chunks' timings (VSHMEM_DEBUG=info, ServedStats): when the request arrived and when
  // its data was all here (a rendezvous fetch ends after the request's arrival).
  Clock::time_point arrived{};
  Clock::time_point data_in{};
};

// A reply in flight: its header and data live until the send completes.
struct Reply {
  ReplyHeader header{};
  std::shared_ptr<void> staged;  // a get's data, in a staging buffer (staged_bytes of it)
  size_t staged_bytes = 0;
  std::vector<uint8_t> data;  // an error's text
  // A get message's data, sent from where it lies in our host heap (no copy).
  const void* heap = nullptr;
  size_t heap_bytes = 0;
  bool eager = false;  // the request's kReplyEager
  const void* payload() const {
    return heap != nullptr ? heap : staged ? staged.get() : data.data();
  }
  size_t payload_bytes() const {
    return heap != nullptr ? heap_bytes : staged ? staged_bytes : data.size();
  }
};

// A peer's unpacked rkey for a region and the offsets it covers: what UcxPath::rkey_of() finds
// without its lock (Peer::last_rkey). Immutable once made; destroyed with the regions at shutdown.
struct RkeyHit {
  uint64_t lo = 0;
  uint64_t hi = 0;
  ucp_rkey_h rkey = nullptr;
};

struct Region {
  uint64_t offset = 0;
  size_t bytes = 0;
  ucp_mem_h memh = nullptr;
  std::vector<std::vector<uint8_t>> packed;  // per PE: its rkey for this region (empty: none)
  // Per PE: its rkey, unpacked on first use (null until then; the record's address is stable).
  std::vector<std::unique_ptr<RkeyHit>> unpacked;
};

struct Peer {
  int pe = -1;
  std::vector<uint8_t> address;
  std::atomic<ucp_ep_h> ep{nullptr};  // set once the endpoint is wired up
  // The peer's second endpoint, closed with `ep` (UcxPath::make_data_ep): the one with peer
  // failure handling when `ep` is the data endpoint without it, or a data endpoint made and
  // not used. Set before `ep` is published.
  ucp_ep_h other = nullptr;
  std::mutex connect_mutex;           // one thread creates and wires up the endpoint
  std::atomic<int> failure{UCS_OK};   // set by the error handler
  std::atomic<bool> wake_due{false};  // network puts to it since our last quiet (kAmWake)
  std::atomic<int64_t> woken_ns{0};   // when we last sent it kAmWake (steady clock)
  // The region its last put, get or atomic addressed (rkey_of): found again without a lock.
  std::atomic<const RkeyHit*> last_rkey{nullptr};
  bool device_heap = false;
  // Atomics on its host heap by UCX (ucp_atomic_op_nbx), not as a target op (see setup()). Set
  // before `ep` is published.
  bool ucx_atomics = false;
  // Puts to it travel as put messages (kPutMessageMax): `ep` has one lane, TCP, and both heaps
  // are host memory. Set before `ep` is published.
  bool put_messages = false;
  // Gets of kGetMessageMin bytes or more from it are get messages: the same conditions as
  // put_messages (and a UCX that does not reach GPU memory). Set before `ep` is published.
  bool get_messages = false;
  // Put messages posted to it that no quiet has confirmed yet, where the last one went (the
  // confirming get reads a byte there: a registered address), and what that get reads into (it
  // outlives a get given up on).
  std::atomic<bool> unconfirmed{false};
  std::atomic<uint64_t> last_message_offset{0};
  uint8_t confirm_sink = 0;
  class UcxPath* owner = nullptr;
  // Direct staging to this peer (our transfers): kDirectUnknown until the first staged transfer
  // asks the peer to map our staging segment (direct_to()).
  std::atomic<int> direct{0};
  std::mutex direct_mutex;
  // Direct staging from this peer (its transfers, performed here): its staging segment, mapped
  // here by its kAttach (ucp_rkey_ptr) and registered with the provider.
  std::mutex mapped_mutex;
  ucp_rkey_h mapped_rkey = nullptr;
  std::atomic<uint8_t*> mapped_base{nullptr};
  std::atomic<size_t> mapped_bytes{0};
};
constexpr int kDirectUnknown = 0;
constexpr int kDirectYes = 1;
constexpr int kDirectNo = 2;

class UcxPath {
 public:
  explicit UcxPath(const vshmem_transport_init_args& args)
      : my_pe_(args.my_pe),
        n_pes_(args.n_pes),
        heap_base_(args.heap_base),
        heap_size_(args.heap_size),
        heap_is_device_(args.heap_is_device != 0),
        static_base_(args.static_base),
        static_size_(args.static_size),
        statics_only_(
            std::none_of(args.remote, args.remote + args.n_pes, [](uint8_t r) { return r != 0; })),
        remote_(args.remote, args.remote + args.n_pes),
        timeout_(args.timeout_ms),
        host_(args.host),
        peers_(static_cast<size_t>(args.n_pes)) {
    for (int p = 0; p < n_pes_; ++p) {
      peers_[p].pe = p;
      peers_[p].owner = this;
    }
  }

  ~UcxPath() { shutdown(); }

  int init(const vshmem_transport_init_args& args, char* err, size_t errlen);
  int add_region(uint64_t offset, size_t bytes, char* err, size_t errlen);
  // Peers' operations on the heap are performed from now on (plugin_abi.h).
  void serve();
  // Collective: registers [local, local + bytes) as the region at `offset` of our address space
  // (heap offsets, or kStatic | offset for the global and static variables).
  int register_region(uint64_t offset, void* local, size_t bytes, bool device, char* err,
                      size_t errlen);
  int put(int pe, uint64_t offset, const void* source, size_t bytes, bool nbi, char* err,
          size_t errlen);
  int get(int pe, void* dest, uint64_t offset, size_t bytes, bool nbi, char* err, size_t errlen);
  // get()'s every case (messages, target ops, several regions, _nbi); get() takes the small
  // blocking one itself.
  __attribute__((noinline)) int get_any(int pe, void* dest, uint64_t offset, size_t bytes, bool nbi,
                                        char* err, size_t errlen);
  int atomic(int pe, int op, uint64_t offset, unsigned width, uint64_t operand, uint64_t compare,
             uint64_t* result, char* err, size_t errlen);
  int signal_add(int pe, uint64_t offset, uint64_t value, char* err, size_t errlen);
  int fence(char* err, size_t errlen);
  int quiet(char* err, size_t errlen);
  // Orders the blocking puts not yet known complete before what follows (a fence when some are).
  int order_after_puts(char* err, size_t errlen);
  // An _nbi operation's request, completed at quiet.
  void keep_nbi(int pe, void* request);
  // A put message (kPutMessageMax) of bytes at offset of PE pe's heap.
  int post_put(int pe, ucp_ep_h ep, uint64_t offset, const void* source, size_t bytes, bool nbi,
               char* err, size_t errlen);
  // quiet(): a get of one byte from every peer with unconfirmed put messages, on the endpoint
  // that carried them; each peer answers after performing every message before it.
  int confirm_put_messages(char* err, size_t errlen);
  int flush_worker(char* err, size_t errlen);
  // kAmWake to every peer our network puts reached since the last call (quiet).
  void send_wakes();
  // After posting an operation that nobody waits for (see kIssueProgressGap).
  VSHMEM_HOT void note_app_issue() {
    note_app_poll();
    // Relaxed load and store, no read-modify-write: two threads posting at once may lose a
    // count, which only moves the next check.
    const unsigned issued = issued_.load(std::memory_order_relaxed) + 1;
    issued_.store(issued, std::memory_order_relaxed);
    if (issued % kIssueCheckEvery != 0) return;
    const int64_t now = Clock::now().time_since_epoch().count();
    if (now - issue_progressed_ns_.load(std::memory_order_relaxed) <
        std::chrono::duration_cast<Clock::duration>(kIssueProgressGap).count()) {
      return;
    }
    issue_progressed_ns_.store(now, std::memory_order_relaxed);
    progress();
  }
  VSHMEM_HOT void progress() {
    note_app_poll();
    {
      const WorkFollows follows;  // what progress_once() queues, run_work() below performs
      progress_once();
    }
    run_work();
  }
  uint32_t caps() const { return caps_; }
  // See plugin_abi.h.
  void wait_event(int timeout_us, int spin_us);

  // The first peer whose endpoint reported a failure, or -1 (see plugin_abi.h).
  int failed_peer(char* err, size_t errlen) const;

 private:
  void log(int level, const std::string& text) {
    if (host_.log != nullptr) host_.log(host_.ctx, level, text.c_str());
  }
  bool log_enabled(int level) {
    return host_.log_enabled != nullptr && host_.log_enabled(host_.ctx, level) != 0;
  }
  int allgather(const void* in, void* out, size_t bytes, char* err, size_t errlen) {
    return host_.allgather(host_.ctx, in, out, bytes, err, errlen);
  }
  int setup(const vshmem_transport_init_args& args, char* err, size_t errlen);
  // Whether UCX can give our endpoints peer failure handling with the transports it may use: an
  // endpoint with it, to our own worker, made and closed at once (see the definition).
  bool probe_peer_errors();
  void shutdown();
  void progress_loop();
  void wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
  }

  // The endpoint to PE pe: the one in place, inline (every operation asks); the first one is
  // created and wired up, and a failed peer reported, out of line (ep_create()).
  VSHMEM_HOT int ep_of(int pe, const char* what, ucp_ep_h* out, char* err, size_t errlen) {
    Peer& peer = peers_[pe];
    if (peer.failure.load(std::memory_order_acquire) == UCS_OK) {
      if (ucp_ep_h ep = peer.ep.load(std::memory_order_acquire)) {
        *out = ep;
        return 0;
      }
    }
    return ep_create(pe, what, out, err, errlen);
  }
  int ep_create(int pe, const char* what, ucp_ep_h* out, char* err, size_t errlen);
  // Wires up a new endpoint before anyone may post to it (see the definition).
  int connect(int pe, ucp_ep_h ep, const char* what, char* err, size_t errlen);
  // Force-closes an endpoint whose connect() failed (nothing of ours was posted to it).
  void close_unconnected(ucp_ep_h ep) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    const Hold hold(worker_lock_);
    void* c = ucp_ep_close_nbx(ep, &param);
    if (c != nullptr && !UCS_PTR_IS_ERR(c)) ucp_request_free(c);  // UCX finishes it
  }
  // The peer's data endpoint, where `first` (wired up, with peer failure handling) has no
  // zero-copy put (see the definition); null: the operations go through `first`.
  ucp_ep_h make_data_ep(int pe, Peer& peer, ucp_ep_h first);
  // Whether ep has one lane, a TCP one (endpoint_info()).
  bool one_tcp_lane(ucp_ep_h ep);
  // What ucp_ep_print_info says of an endpoint (see the definition).
  std::string endpoint_info(ucp_ep_h ep);
  // The rkey of PE pe for [offset, offset + bytes); *span: how many of the bytes it covers.
  // Null: that memory is not registered (target ops).
  // Inline: the region this peer's last operation addressed (no lock: regions are only added
  // while the job runs, and an unpacked rkey is kept until shutdown); the others out of line.
  VSHMEM_HOT ucp_rkey_h rkey_of(int pe, ucp_ep_h ep, uint64_t offset, size_t bytes, size_t* span) {
    const RkeyHit* hit = peers_[pe].last_rkey.load(std::memory_order_acquire);
    if (hit != nullptr && offset >= hit->lo && offset < hit->hi) {
      *span = std::min<size_t>(bytes, hit->hi - offset);
      return hit->rkey;
    }
    return rkey_lookup(pe, ep, offset, bytes, span);
  }
  ucp_rkey_h rkey_lookup(int pe, ucp_ep_h ep, uint64_t offset, size_t bytes, size_t* span);
  int peer_error(int pe, const char* what, ucs_status_t status, char* err, size_t errlen);
  // serve: perform peers' requests meanwhile (not while an endpoint is being wired up: performing
  // one may need that endpoint).
  // A request that completed at once (null) returns inline, without a call.
  VSHMEM_HOT int wait(void* request, int pe, const char* what, char* err, size_t errlen,
                      bool serve = true) {
    if (request == nullptr) return 0;
    return wait_request(request, pe, what, err, errlen, serve);
  }
  int wait_request(void* request, int pe, const char* what, char* err, size_t errlen, bool serve);
  int wait_op(PendingOp& op, uint64_t token, int pe, const char* what, char* err, size_t errlen);
  Clock::time_point deadline() const { return Clock::now() + timeout_; }
  std::string seconds() const {
    return format("%.3g s", static_cast<double>(timeout_.count()) / 1000.0);
  }

  // Staging buffers of stage_chunk_ bytes (host_.alloc_staging: page-locked for a GPU heap, so the
  // provider's copies run at full speed), reused for the life of the path. A buffer UCX may still
  // use (a transfer abandoned after a failure) is never handed out again; all are freed after
  // the worker is destroyed.
  int take_staging(void** out, char* err, size_t errlen);
  void give_staging(void* p);
  std::shared_ptr<void> shared_staging(void* p) {
    return std::shared_ptr<void>(p, [this](void* q) { give_staging(q); });
  }
  // Where a get's reply of `bytes` is written: a staging buffer (reused, where a fresh vector per
  // chunk cost an allocation, its page faults and zeroing on the path of every chunk), or the
  // reply's own vector when the reply is larger than a chunk or no buffer is free.
  void* reply_buffer(Reply* reply, size_t bytes) {
    void* buf = nullptr;
    if (bytes <= stage_chunk_ && take_staging(&buf, nullptr, 0) == 0) {
      reply->staged = shared_staging(buf);
      reply->staged_bytes = bytes;
      return buf;
    }
    reply->data.resize(bytes);
    return reply->data.data();
  }
  // stage_depth_ buffers for one staged transfer of ours, taken on first use: with `direct`,
  // slots of our staging segment (the target maps it) while it has free ones, else ordinary
  // staging buffers (whose chunks travel in the messages).
  class StagingSet {
   public:
    StagingSet(UcxPath& path, bool direct)
        : path_(path),
          direct_(direct),
          bufs_(static_cast<size_t>(path.stage_depth_), nullptr),
          offsets_(static_cast<size_t>(path.stage_depth_), kNone) {}
    ~StagingSet() {
      if (abandoned_) return;  // UCX or the peer may still use them: never handed out again
      for (size_t i = 0; i < bufs_.size(); ++i) {
        if (bufs_[i] == nullptr) continue;
        if (offsets_[i] != kNone) {
          path_.give_segment_slot(offsets_[i]);
        } else {
          path_.give_staging(bufs_[i]);
        }
      }
    }
    int get(int slot, void** out, char* err, size_t errlen) {
      const auto i = static_cast<size_t>(slot);
      if (bufs_[i] == nullptr) {
        if (direct_ && path_.take_segment_slot(&offsets_[i])) {
          bufs_[i] = path_.segment_.base + offsets_[i];
        } else if (int r = path_.take_staging(&bufs_[i], err, errlen)) {
          return r;
        }
      }
      *out = bufs_[i];
      return 0;
    }
    // The slot's offset in our staging segment, or kNone (an ordinary staging buffer).
    size_t segment_offset(int slot) const { return offsets_[static_cast<size_t>(slot)]; }
    void abandon() { abandoned_ = true; }
    static constexpr size_t kNone = ~size_t{0};

   private:
    UcxPath& path_;
    const bool direct_;
    std::vector<void*> bufs_;
    std::vector<size_t> offsets_;
    bool abandoned_ = false;
  };
  // Direct staging (see the top of the file): our staging segment, made on the first staged
  // transfer that may use it (own_segment()), cut into slots of stage_chunk_ bytes.
  struct Segment {
    bool tried = false;
    std::string failure;  // why there is none
    ucp_mem_h memh = nullptr;
    uint8_t* base = nullptr;
    size_t bytes = 0;
    bool registered = false;  // with the provider (host_.register_host)
    std::vector<uint8_t> packed;
    std::vector<size_t> free;  // offsets of the free slots
  };
  std::mutex segment_mutex_;
  Segment segment_;
  // Makes our staging segment on the first call; false (with *why) when UCX or the provider
  // would not.
  bool own_segment(std::string* why);
  bool take_segment_slot(size_t* offset) {
    std::lock_guard<std::mutex> lock(segment_mutex_);
    if (segment_.free.empty()) return false;
    *offset = segment_.free.back();
    segment_.free.pop_back();
    return true;
  }
  void give_segment_slot(size_t offset) {
    std::lock_guard<std::mutex> lock(segment_mutex_);
    segment_.free.push_back(offset);
  }
  // Whether our staged transfers to PE pe use direct staging: asked once per peer (the peer maps
  // our segment, or says why it cannot); an error only when the peer did not answer.
  int direct_to(int pe, ucp_ep_h ep, bool* direct, char* err, size_t errlen);
  // The target's side of kAttach: maps the requester's segment; "" or why not.
  std::string attach_peer(const Work& w);
  // [offset, offset + bytes) of PE pe's staging segment, mapped here; null (with *why) if not.
  uint8_t* peer_segment(int pe, uint64_t offset, uint64_t bytes, std::string* why);
  // Staged chunks of ours, by how their bytes crossed (logged at VSHMEM_DEBUG=info at the end).
  std::atomic<uint64_t> chunks_direct_{0}, chunks_carried_{0};
  std::mutex staging_mutex_;
  std::vector<void*> staging_free_;
  std::vector<void*> staging_all_;

  // Target ops, our side.
  uint64_t register_op(PendingOp* op);
  void forget_op(uint64_t token);
  friend struct GetMessage;  // ~GetMessage forgets its op
  // target_put / target_get: one staged transfer, chunk by chunk (run_staged).
  class StagedOps;
  int target_transfer(bool put, int pe, ucp_ep_h ep, uint64_t offset, void* local, size_t bytes,
                      char* err, size_t errlen);
  // An eager active message that is only its header h: UCX owns a copy until it has sent it
  // (the send's callback frees it, or this at once when the send completed or failed here).
  // Nobody waits for the send; where `token` names an op (a get message's request), a send that
  // UCX fails later fails that op with UCX's status (fail_op), instead of leaving its caller to
  // wait for a reply until the time limit.
  template <class Header>
  struct HeaderSend {
    Header header;
    UcxPath* path;
    uint64_t token;
  };
  template <class Header>
  ucs_status_t send_header(ucp_ep_h ep, uint16_t id, const Header& h, UcxPath* path = nullptr,
                           uint64_t token = 0) {
    auto* s = new HeaderSend<Header>{h, path, token};
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    param.cb.send = [](void* request, ucs_status_t status, void* user) {
      auto* sent = static_cast<HeaderSend<Header>*>(user);
      if (status != UCS_OK && sent->path != nullptr) sent->path->fail_op(sent->token, status);
      delete sent;
      ucp_request_free(request);  // a callback: under the progressing thread's turn
    };
    param.user_data = s;
    const Hold hold(worker_lock_);
    void* r = ucp_am_send_nbx(ep, id, &s->header, sizeof(Header), nullptr, 0, &param);
    if (r == nullptr || UCS_PTR_IS_ERR(r)) delete s;
    return UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r) : UCS_OK;
  }
  // The op of token, if still registered, completes with UCX's failure of its request's send.
  void fail_op(uint64_t token, ucs_status_t status);
  int send_request(int pe, ucp_ep_h ep, const RequestHeader& h, const void* data, size_t bytes,
                   void** request, const char* what, char* err, size_t errlen);
  int target_put(int pe, ucp_ep_h ep, uint64_t offset, const void* source, size_t bytes, char* err,
                 size_t errlen);
  int target_get(int pe, ucp_ep_h ep, void* dest, uint64_t offset, size_t bytes, char* err,
                 size_t errlen);
  // A get of bytes at offset of PE pe's host heap as get messages (kGetMessageMax): blocking, or
  // (nbi) completed at quiet (complete_nbi_gets()).
  int get_by_messages(int pe, ucp_ep_h ep, uint8_t* dest, uint64_t offset, size_t bytes, bool nbi,
                      char* err, size_t errlen);
  // Registers m's op and sends its request: bytes (at most kGetMessageMax) at offset, into dest.
  int send_get_message(int pe, ucp_ep_h ep, GetMessage& m, uint8_t* dest, uint64_t offset,
                       size_t bytes, char* err, size_t errlen);
  // The reply of m has arrived: 0, or the error it brought.
  int finish_get_message(GetMessage& m, char* err, size_t errlen);
  int complete_nbi_gets(char* err, size_t errlen);
  // One turn of a wait for PE pe's answers that found none: progress the worker (and serve
  // peers: the progress thread is handed off meanwhile); every 256th turn a failed peer or the
  // time limit `until` ends the wait (the error).
  int idle_turn(int pe, const char* what, unsigned* turns, Clock::time_point until, char* err,
                size_t errlen);
  int target_atomic(int pe, ucp_ep_h ep, int op, uint64_t offset, unsigned width, uint64_t operand,
                    uint64_t compare, uint64_t* result, char* err, size_t errlen);
  // Target ops, the target's side.
  static ucs_status_t on_request(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_reply(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);
  // Performs the queued target ops and answers those whose copies have finished; returns how many.
  unsigned run_work();
  // Answers the target ops whose copies have finished (host_.copy_start); returns how many.
  unsigned finish_copies();
  void perform(Work& w);
  // A signal (signal_add): performed right here, in the thread that received it, on a host heap
  // (with the CPU's atomics: atomic with respect to the mapped peers' and the PE's own); on a GPU
  // heap, or when malformed, queued for the progress thread like a request without a token
  // (perform() uses the provider's atomic, or reports the error).
  static ucs_status_t on_signal(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  void queue(std::unique_ptr<Work> w);
  void send_reply(int pe, std::unique_ptr<Reply> reply);

  const int my_pe_;
  const int n_pes_;
  const uintptr_t heap_base_;
  const size_t heap_size_;
  const bool heap_is_device_;
  const uintptr_t static_base_;
  const size_t static_size_;
  // No peer of this PE is remote: UCX serves only the global and static variables of PEs on this
  // node (every heap is mapped), so host shared memory is all it needs.
  const bool statics_only_;
  const std::vector<uint8_t> remote_;    // per PE: reached through this path (else node-local)
  std::string transports_ = "UCX_TLS";   // what UCX may use, for the log
  std::vector<uintptr_t> static_bases_;  // per PE: where its global and static variables are
  // Where PE pe's copy of what `offset` addresses is, in pe's address space.
  uint64_t remote_address(int pe, uint64_t offset) const {
    return (offset & kStatic) != 0 ? static_bases_[pe] + (offset & ~kStatic) : heap_base_ + offset;
  }
  const std::chrono::milliseconds timeout_;
  vshmem_transport_host host_;
  uint32_t caps_ = 0;
  bool cuda_memory_ = false;  // UCX registers GPU memory
  // VSHMEM_UCX_ATOMICS (see setup()): who performs atomics on a peer's host heap.
  enum class Atomics : int32_t {
    kTarget = VSHMEM_TRANSPORT_ATOMICS_TARGET,
    kNetwork = VSHMEM_TRANSPORT_ATOMICS_NETWORK,
    kAuto = VSHMEM_TRANSPORT_ATOMICS_AUTO
  };
  Atomics atomics_ = Atomics::kAuto;
  bool cpu_atomic_mode_ = true;  // UCX took ATOMIC_MODE=cpu (auto)
  static const char* atomics_name(int32_t a) {
    return a == VSHMEM_TRANSPORT_ATOMICS_NETWORK ? "network"
           : a == VSHMEM_TRANSPORT_ATOMICS_AUTO  ? "auto"
                                                 : "target";
  }
  // Register the heap for network put/get; VSHMEM_UCX_RMA=target sends every transfer through
  // the target's progress thread instead (what a GPU heap without UCX CUDA support gets).
  bool network_rma_ = true;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<Peer> peers_;
  std::mutex mutex_;  // rkeys, regions
  std::vector<Region> regions_;
  // The heap's bytes that peers may address (what perform() and on_signal() check): 0 until
  // serve(), then what add_region() has added. Written by the application thread (add_region and
  // serve are called from the heap's collective steps), read by whoever performs peers' requests.
  std::atomic<uint64_t> committed_{0};
  // Whether [offset, offset + bytes) lies in the heap's bytes in use (committed_).
  bool in_heap_use(uint64_t offset, uint64_t bytes) const {
    return bytes <= heap_size_ && offset <= heap_size_ - bytes &&
           offset + bytes <= committed_.load(std::memory_order_acquire);
  }
  uint64_t added_ = 0;  // what add_region() has added
  bool serving_ = false;
  // Endpoints are created with peer failure handling (else: the time limits notice a dead peer).
  // One answer for the whole job, known before the first endpoint exists: probe_peer_errors(),
  // agreed in init(). See ep_of() for why it must never differ between two PEs.
  bool peer_errors_ = false;
  // Why the job's endpoints go without it, for the "worker ready" line (empty: they have it, or
  // our transports lack it).
  std::string no_peer_errors_why_;
  // VSHMEM_UCX_DATA_ENDPOINT: data endpoints where the endpoints with peer failure handling
  // have no zero-copy put (make_data_ep()).
  bool data_ep_ = true;
  bool put_messages_ = false;  // VSHMEM_UCX_PUT_MESSAGES (kPutMessageMax; setup())
  bool get_messages_ = false;  // VSHMEM_UCX_GET_MESSAGES (kGetMessageMax; setup())
  bool split_gets_ = false;    // kGetMessageSplitMin (setup())
  // The size of the messages a get of `bytes` is cut into.
  // Up to kGetMessageDepth pieces of at least kGetMessageSplitMin, equal but for the last, in
  // whole pages (each piece starts page-aligned where the get does).
  size_t get_message_bytes(size_t bytes) const {
    if (!split_gets_) return kGetMessageMax;
    const size_t pieces = std::clamp<size_t>(bytes / kGetMessageSplitMin, 1, kGetMessageDepth);
    constexpr size_t kPage = 4096;
    const size_t piece = ((bytes + pieces - 1) / pieces + kPage - 1) / kPage * kPage;
    return std::min(piece, kGetMessageMax);
  }
  ucp_ep_h probe_ep_ = nullptr;         // probe_peer_errors()'s endpoint to our own worker
  std::atomic<bool> unordered_{false};  // blocking puts issued since the last fence or quiet
  // Network puts and _nbi gets posted so far, and how many of them the last completed flush
  // covered (quiet skips the flush's round trip when nothing new was posted).
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> flushed_{0};
  // note_app_issue(): operations posted without a wait, and when it last progressed the worker.
  std::atomic<unsigned> issued_{0};
  std::atomic<int64_t> issue_progressed_ns_{0};
  // Put messages posted so far; the peers with unconfirmed ones (Peer::unconfirmed), which
  // quiet() confirms.
  std::atomic<uint64_t> messaged_{0};
  // posted_ + messaged_ at the last fence: how many operations it ordered.
  std::atomic<uint64_t> fenced_{0};
  std::atomic<int> unconfirmed_peers_{0};
  SharedCompletion confirming_;  // confirm_put_messages()
  // Operations waiting for a peer's reply, by token. Before nbi_gets_: a get message left there
  // forgets its op when it goes (~GetMessage).
  std::mutex ops_mutex_;
  std::unordered_map<uint64_t, PendingOp*> ops_;
  uint64_t next_token_ = 1;
  std::mutex nbi_mutex_;
  std::vector<std::pair<int, void*>> nbi_;  // (PE, request) of _nbi operations not yet quieted
  std::atomic<size_t> nbi_count_{0};        // nbi_.size(), read without the lock by quiet()
  // _nbi get messages not yet quieted (under nbi_mutex_), and their number (read without it).
  std::vector<std::unique_ptr<GetMessage>> nbi_gets_;
  std::atomic<size_t> nbi_gets_count_{0};
  SharedCompletion completing_gets_;  // complete_nbi_gets()

  std::mutex work_mutex_;
  std::deque<Work> work_;
  std::atomic<size_t> work_count_{0};  // work_.size(), read without the lock
  // Target ops whose copy into or out of the heap is still running; answered when it is done.
  struct RunningCopy {
    uint64_t ticket = 0;
    Work work;                     // keeps a put's staging buffer
    std::unique_ptr<Reply> reply;  // a get's data is copied into its staging buffer
    Clock::time_point performed{};
  };
  std::mutex copies_mutex_;
  std::deque<RunningCopy> copies_;
  std::atomic<size_t> copies_count_{0};  // copies_.size(), read without the lock
  // Peers' staged chunks that this PE served (put/get target ops with data), with where their
  // time went, summed in nanoseconds: logged at VSHMEM_DEBUG=info when the path closes.
  struct ServedStats {
    std::atomic<uint64_t> chunks{0}, bytes{0};
    std::atomic<uint64_t> direct{0};    // of the chunks: direct staging (no data in the messages)
    std::atomic<uint64_t> fetch_ns{0};  // request arrived -> its data is here (rendezvous)
    std::atomic<uint64_t> queue_ns{0};  // data here -> a thread starts performing it
    std::atomic<uint64_t> copy_ns{0};   // performing (the copy into or out of the heap) -> reply
  } served_;
  // Peers' small target ops (atomics, signals, puts and gets of at most kSmallOpBytes: a device
  // call through the proxy), per kind: how many, and their time from arrival to being performed
  // (queued) and from there to the answer (performed: the provider's atomic or copy on the heap).
  static constexpr uint64_t kSmallOpBytes = 4096;
  struct SmallStats {
    std::atomic<uint64_t> count{0}, queue_ns{0}, perform_ns{0}, perform_max_ns{0};
  } small_[3];  // put, get, atomic (signals included)
  void note_served(const Work& w, Clock::time_point performed) {
    const auto op = static_cast<TargetOp>(w.header.op);
    const auto ns = [](Clock::duration d) {
      return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
    };
    if (w.arrived != Clock::time_point{} &&
        (op == TargetOp::kAtomic ||
         ((op == TargetOp::kPut || op == TargetOp::kGet) && w.header.bytes <= kSmallOpBytes))) {
      SmallStats& st = small_[op == TargetOp::kPut ? 0 : op == TargetOp::kGet ? 1 : 2];
      const uint64_t done = ns(Clock::now() - performed);
      st.count.fetch_add(1, std::memory_order_relaxed);
      st.queue_ns.fetch_add(ns(performed - w.arrived), std::memory_order_relaxed);
      st.perform_ns.fetch_add(done, std::memory_order_relaxed);
      uint64_t max = st.perform_max_ns.load(std::memory_order_relaxed);
      while (done > max && !st.perform_max_ns.compare_exchange_weak(max, done)) {
      }
    }
    if (w.arrived == Clock::time_point{} || w.header.bytes == 0 ||
        (op != TargetOp::kPut && op != TargetOp::kGet)) {
      return;
    }
    const Clock::time_point now = Clock::now();
    const Clock::time_point in = w.data_in == Clock::time_point{} ? w.arrived : w.data_in;
    served_.chunks.fetch_add(1, std::memory_order_relaxed);
    if (w.header.direct != 0) served_.direct.fetch_add(1, std::memory_order_relaxed);
    served_.bytes.fetch_add(w.header.bytes, std::memory_order_relaxed);
    served_.fetch_ns.fetch_add(ns(in - w.arrived), std::memory_order_relaxed);
    served_.queue_ns.fetch_add(ns(performed - in), std::memory_order_relaxed);
    served_.copy_ns.fetch_add(ns(now - performed), std::memory_order_relaxed);
  }

  // Hand-off between the application's own waits and the progress thread: while an application
  // thread progresses the worker (it waits in a call, or polls its memory: read_own -> progress),
  // the progress thread leaves the worker alone. Two threads taking the worker's lock for every
  // message made a 2-PE barrier over TCP cost milliseconds on a loaded 2-core machine (the lock is
  // a spinlock: the thread that held it was descheduled while the other spun).
  std::atomic<int> app_waiters_{0};
  // Bumped by every application poll (no clock read on that path); the progress thread compares
  // it across its own sleep to see whether the application still polls.
  std::atomic<uint64_t> app_polls_{0};
  void note_app_poll() {
    const uint64_t polls = app_polls_.load(std::memory_order_relaxed) + 1;
    app_polls_.store(polls, std::memory_order_relaxed);
    if (polls % kHandoffCheckEvery == 0 && handoff_fed_.load(std::memory_order_relaxed)) {
      feed_handoff(Clock::now());
    }
  }
  // From an application thread's wait, now and then (and from note_app_poll()).
  void still_polling(Clock::time_point now) {
    if (handoff_fed_.load(std::memory_order_relaxed)) feed_handoff(now);
  }
  // The progress thread's hand-off deadline where the application pushes it (kHandoffFedMs):
  // set while the thread sleeps on it.
  std::atomic<bool> handoff_fed_{false};
  std::atomic<int64_t> handoff_fed_ns_{0};  // when it was last pushed
  int handoff_timer_fd_ = -1;  // -1: none (timerfd_create failed): look every kHandoffMs
  bool arm_handoff_timer(int ms) const;
  // The application polls: push the progress thread's deadline kHandoffFedMs ahead if
  // kHandoffPushEvery passed since the last push (one thread pushes; a lost race only delays the
  // next).
  void feed_handoff(Clock::time_point now) {
    const int64_t at = now.time_since_epoch().count();
    int64_t last = handoff_fed_ns_.load(std::memory_order_relaxed);
    constexpr int64_t kEvery = Clock::duration(kHandoffPushEvery).count();
    if (at - last < kEvery || !handoff_fed_ns_.compare_exchange_strong(last, at)) return;
    (void)arm_handoff_timer(kHandoffFedMs);
  }
  // Set while a thread progresses the worker and runs run_work() right after: what it queues
  // needs no wake-up of the progress thread (an eventfd write, microseconds on the path of every
  // remote PE's atomic, signal and small put on a GPU heap).
  inline static thread_local bool t_work_follows = false;
  struct WorkFollows {
    WorkFollows() { t_work_follows = true; }
    ~WorkFollows() { t_work_follows = false; }
    WorkFollows(const WorkFollows&) = delete;
    WorkFollows& operator=(const WorkFollows&) = delete;
  };
  // Every call into the worker holds worker_lock_ (worker_lock.hpp: the worker is
  // UCS_THREAD_MODE_SERIALIZED). Whoever progresses the worker holds the turn (try_lock); the
  // others skip theirs instead of spinning: a descheduled holder then costs nobody a spinning
  // core. A posting call waits for it (Hold). Callbacks run under the progressing thread's turn.
  using Turn = std::unique_lock<vshmem::WorkerLock>;
  using Hold = std::lock_guard<vshmem::WorkerLock>;
  vshmem::WorkerLock worker_lock_;
  VSHMEM_HOT void free_request(void* request) {
    const Hold hold(worker_lock_);
    ucp_request_free(request);
  }
  // call() under the worker lock: one UCX call that posts or changes something.
  template <class Call>
  VSHMEM_HOT auto locked(Call&& call) {
    const Hold hold(worker_lock_);
    return call();
  }
  VSHMEM_HOT unsigned progress_once() {
    const Turn turn(worker_lock_, std::try_to_lock);
    const unsigned n = turn.owns_lock() ? ucp_worker_progress(worker_) : 0;
    if (n != 0) note_busy();
    return n;
  }
  // When the worker last had something to do (a message, a completion, a target op): the idle
  // spin of the progress thread and of wait_event() counts from there (kIdleSpinUs). Whoever
  // finds something to do only counts it (no clock read on the path of every operation that
  // completes: about 25 ns on a guest with kvm-clock); a spinning thread reads the clock, and
  // takes the first time it sees a new count as the time of that activity. A spinner looks right
  // after its own progress call, so that is microseconds late; activity that another thread
  // handled while nobody spun (an application's own gets) costs at most one spin window at the
  // start of the next wait.
  std::atomic<uint64_t> busy_count_{0};
  std::atomic<uint64_t> busy_seen_{0};
  std::atomic<int64_t> busy_seen_ns_{0};
  void note_busy() {
    // Load and store, no read-modify-write: two threads at once may count one, which still
    // differs from what the spinners saw.
    busy_count_.store(busy_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Whether the worker had something to do within the last `spin` (the idle spin by default).
  bool recently_busy(Clock::duration spin) {
    if (spin.count() == 0) return false;
    const int64_t now = Clock::now().time_since_epoch().count();
    const uint64_t count = busy_count_.load(std::memory_order_relaxed);
    if (count != busy_seen_.load(std::memory_order_relaxed)) {
      busy_seen_.store(count, std::memory_order_relaxed);
      busy_seen_ns_.store(now, std::memory_order_relaxed);
      return true;
    }
    return now - busy_seen_ns_.load(std::memory_order_relaxed) < spin.count();
  }
  bool recently_busy() { return recently_busy(idle_spin_); }
  Clock::duration idle_spin_{0};  // see kIdleSpinUs
  bool cpus_to_spare_ = false;    // see kIdleSpinUs
  // Staged transfers (target ops): bytes per chunk (and per staging buffer), chunks in flight.
  size_t stage_chunk_ = kStageChunk;
  int stage_depth_ = kStageDepth;
  bool stage_direct_ = true;  // VSHMEM_UCX_STAGE_DIRECT
  struct AppWait {
    explicit AppWait(UcxPath& p) : path(p) { path.app_waiters_.fetch_add(1); }
    ~AppWait() {
      path.note_app_poll();
      path.app_waiters_.fetch_sub(1);
    }
    UcxPath& path;
  };

  int worker_fd_ = -1;  // the worker's event fd (ucp_worker_get_efd)
  int epoll_fd_ = -1;
  // The epoll set of wake_fd_ alone: the progress thread's wait while handed off.
  int wake_only_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread progress_thread_;
};

// ---------------------------------------------------------------------------------------------
// Set-up and teardown.

int UcxPath::init(const vshmem_transport_init_args& args, char* err, size_t errlen) {
  // Every PE takes part in the exchange, also one whose UCX set-up failed, so that nobody waits
  // for it; it then reports its own error and the others name it.
  char local_err[1024] = {};
  const Clock::time_point t0 = Clock::now();
  int rc = setup(args, local_err, sizeof(local_err));
  const Clock::time_point t1 = Clock::now();
  std::vector<uint8_t> address;
  if (rc == 0) {
    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    ucs_status_t s = ucp_worker_query(worker_, &attr);
    if (s != UCS_OK) {
      rc = set_err(local_err, sizeof(local_err), kSystem,
                   format("ucp_worker_query: %s", ucs_status_string(s)));
    } else {
      auto* a = reinterpret_cast<const uint8_t*>(attr.address);
      address.assign(a, a + attr.address_length);
      ucp_worker_release_address(worker_, attr.address);
    }
  }
  struct Info {
    uint64_t address_bytes;
    int32_t ok;
    int32_t device_heap;
    uint64_t static_base;
    int32_t atomics;  // Atomics
    int32_t peer_errors;
  } mine{};
  mine.address_bytes = address.size();
  mine.ok = rc == 0 ? 1 : 0;
  mine.device_heap = heap_is_device_ ? 1 : 0;
  mine.static_base = static_base_;
  mine.atomics = static_cast<int32_t>(atomics_);
  mine.peer_errors = peer_errors_ ? 1 : 0;
  std::vector<Info> all(static_cast<size_t>(n_pes_));
  if (int r = allgather(&mine, all.data(), sizeof(mine), err, errlen)) return r;
  size_t longest = 0;
  for (const Info& i : all) longest = std::max<size_t>(longest, i.address_bytes);
  std::vector<uint8_t> padded(longest), gathered(longest * static_cast<size_t>(n_pes_));
  std::memcpy(padded.data(), address.data(), address.size());
  if (longest > 0) {
    if (int r = allgather(padded.data(), gathered.data(), longest, err, errlen)) return r;
  }
  if (rc != 0) return set_err(err, errlen, rc, local_err);
  for (int p = 0; p < n_pes_; ++p) {
    if (all[p].ok && all[p].atomics != all[0].atomics) {
      return set_err(err, errlen, kInvalidArgument,
                     format("VSHMEM_UCX_ATOMICS differs between PEs (PE 0: %s, PE %d: %s): "
                            "atomics by UCX and by the target are not atomic with respect to "
                            "each other; set the same value on every PE",
                            atomics_name(all[0].atomics), p, atomics_name(all[p].atomics)));
    }
  }
  // Peer failure handling only if every PE's transports have it: an endpoint with it and the
  // peer's without it cannot be paired (ep_of()).
  for (int p = 0; p < n_pes_; ++p) {
    if (all[p].ok && !all[p].peer_errors && peer_errors_) {
      peer_errors_ = false;
      no_peer_errors_why_ =
          format("PE %d's transports lack it or it has VSHMEM_UCX_PEER_ERRORS=0", p);
      log(2, format("ucx: endpoints without peer failure handling: PE %d's transports lack it "
                    "or it has VSHMEM_UCX_PEER_ERRORS=0 (a dead peer is noticed by the time limit)",
                    p));
    }
  }
  // Said once the job has agreed on peer failure handling (above), which the line reports.
  if (log_enabled(2)) {
    const std::string errors =
        peer_errors_
            ? "yes"
            : (no_peer_errors_why_.empty() ? "no" : format("no (%s)", no_peer_errors_why_.c_str()));
    log(2, format("ucx: worker ready (UCX %s; transports %s; peer failure handling %s; GPU "
                  "memory %s; put/get %s; atomics %s; idle spin %lld us)",
                  ucp_get_version_string(), transports_.c_str(), errors.c_str(),
                  cuda_memory_ ? "registered directly" : "staged through host buffers",
                  network_rma_ ? "network" : "at the target",
                  atomics_ == Atomics::kNetwork ? "network on host heaps"
                  : atomics_ == Atomics::kAuto
                      ? "by UCX in its CPU mode on host heaps where the endpoint allows"
                      : "at the target",
                  static_cast<long long>(
                      std::chrono::duration_cast<std::chrono::microseconds>(idle_spin_).count())));
  }
  for (int p = 0; p < n_pes_; ++p) {
    // The global and static variables are registered collectively below: then every PE stops.
    if (!all[p].ok && (args.remote[p] || static_size_ > 0)) {
      return set_err(err, errlen, kPeerFailure,
                     format("PE %d could not start UCX (see its message)", p));
    }
    const uint8_t* a = gathered.data() + static_cast<size_t>(p) * longest;
    peers_[p].address.assign(a, a + all[p].address_bytes);
    peers_[p].device_heap = all[p].device_heap != 0;
    static_bases_.push_back(static_cast<uintptr_t>(all[p].static_base));
  }
  progress_thread_ = std::thread([this] { progress_loop(); });
  const Clock::time_point t2 = Clock::now();
  // The global and static variables (every PE's base is in static_bases_: they differ with PIE
  // executables), registered like a heap region.
  if (static_size_ > 0) {
    if (int r = register_region(kStatic, reinterpret_cast<void*>(static_base_), static_size_, false,
                                err, errlen)) {
      return r;
    }
  }
  if (log_enabled(2)) {
    const auto ms = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    log(2, format("ucx: set-up %.1f ms: context and worker %.1f, address exchange %.1f, "
                  "global and static variables registered %.1f",
                  ms(Clock::now() - t0), ms(t1 - t0), ms(t2 - t1), ms(Clock::now() - t2)));
  }
  return 0;
}

// Whether a UCX_TLS value ("all", UCX's default; empty: unknown, taken as all) loads a
// shared-memory transport of the mm family (posix, sysv, xpmem), the transports
// UCX_MM_ERROR_HANDLING applies to: one of them, an alias that includes them ("sm", "shm", "mm",
// "all"), or a list of exclusions ("^...") that does not exclude them all.
bool tls_loads_mm(const char* tls) {
  if (tls == nullptr || *tls == '\0') return true;
  const bool excluding = *tls == '^';
  std::vector<std::string> names;
  for (const char* at = excluding ? tls + 1 : tls; *at != '\0';) {
    const char* end = std::strchr(at, ',');
    if (end == nullptr) end = at + std::strlen(at);
    std::string name(at, end);
    name = name.substr(0, name.find(':'));  // "sm:aux": the transport's name only
    names.push_back(name);
    at = *end == ',' ? end + 1 : end;
  }
  const auto named = [&](const char* n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  if (excluding) {
    return !(named("sm") || named("shm") || named("mm") ||
             (named("posix") && named("sysv") && named("xpmem")));
  }
  return named("all") || named("sm") || named("shm") || named("mm") || named("posix") ||
         named("sysv") || named("xpmem");
}

// What a UCX print function (ucp_ep_print_info, ucp_config_print) writes, as a string.
template <typename Print>
std::string printed_by(Print&& print) {
  char* text = nullptr;
  size_t bytes = 0;
  FILE* f = open_memstream(&text, &bytes);
  if (f == nullptr) return {};
  print(f);
  std::fclose(f);
  std::string out(text != nullptr ? text : "", bytes);
  std::free(text);
  return out;
}

// A setting of UCX's configuration as UCX prints it ("UCX_TLS" -> "tcp"; booleans as "y" or "n",
// whatever the variable said: "yes", "1"): UCX's own reading of its variables and configuration
// files, which libvshmem's table does not hold. Empty when the configuration has no such key.
std::string config_value(const ucp_config_t* config, const char* key) {
  const std::string printed = "\n" + printed_by([&](FILE* f) {
                                ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
                              });
  const std::string start = "\n" + std::string(key) + "=";
  const size_t at = printed.find(start);
  if (at == std::string::npos) return {};
  const size_t from = at + start.size();
  return printed.substr(from, printed.find('\n', from) - from);
}

int UcxPath::setup(const vshmem_transport_init_args& args, char* err, size_t errlen) {
  // The settings come parsed and checked from libvshmem's configuration table (init args).
  network_rma_ = args.rma_at_target == 0;
  // Who performs atomics on a peer's host heap (VSHMEM_UCX_ATOMICS). A GPU heap, and global and
  // static variables, always get the target's (an active message; the target applies it with
  // the provider's atomics, or its CPU's).
  // - auto (the default): UCX's atomics, with UCX told to keep them CPU-coherent (ATOMIC_MODE=cpu:
  //   shared-memory CPU atomics, or its emulation, whose handler at the target applies a CPU
  //   atomic, amo_sw.c), on every endpoint without peer failure handling (the data endpoint over
  //   TCP, make_data_ep(); UCX 1.13's shared memory); the target's otherwise. Both kinds are CPU
  //   atomics at the target, as are its node-local peers' and its own, so they are atomic with
  //   respect to each other. UCX's emulation answers from its own handler: 8-byte fetch_add over
  //   TCP 16.7 us against 17.7 for our target op, OSHMEM 16.7 (2-core box, UCX 1.13; issue #13
  //   session 16).
  // - network: UCX's atomics in its default mode, the NIC's where UCX has them. Those are not
  //   atomic with respect to CPU atomics on the same word; and UCX 1.16 (protocols v2, its
  //   default) has no atomic protocol for an endpoint created with peer failure handling
  //   (UCP_ERR_HANDLING_MODE_PEER): a protocol is only selected for such an endpoint when it
  //   declares UCP_PROTO_COMMON_INIT_FLAG_ERR_HANDLING (proto_common.c,
  //   ucp_proto_common_init_check_err_handling), and the atomic ones ("amo/fetch/sw" in
  //   amo_sw.c, "amo/offload/*") do not. The request then waits on the stub protocol until the
  //   endpoint is connected and is cancelled (proto_reconfig.c: "cannot find remote protocol
  //   for ... amo_fetch", UCS_ERR_CANCELED). UCX 1.13 (protocols v1) does not check this.
  // - target: always the target's.
  // The choice must be the same on every PE (init() checks it): the NIC's atomics and CPU atomics
  // on one word would not be atomic with respect to each other.
  if (args.atomics_on_network != VSHMEM_TRANSPORT_ATOMICS_TARGET &&
      args.atomics_on_network != VSHMEM_TRANSPORT_ATOMICS_NETWORK &&
      args.atomics_on_network != VSHMEM_TRANSPORT_ATOMICS_AUTO) {
    return set_err(err, errlen, kInvalidArgument,
                   format("VSHMEM_UCX_ATOMICS: unknown choice %d", args.atomics_on_network));
  }
  atomics_ = static_cast<Atomics>(args.atomics_on_network);
  {
    // The idle spin (kIdleSpinUs): on where the CPUs are at least four times this node's PEs;
    // elsewhere the application pushes the hand-off's deadline (kHandoffFedMs).
    int local = 0;
    for (int p = 0; p < n_pes_; ++p) local += remote_[p] ? 0 : 1;
    cpu_set_t set;
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    cpus_to_spare_ = cpus >= 4 * std::max(local, 1);
    long us = cpus_to_spare_ ? kIdleSpinUs : 0;
    if (args.spin_us > 1000000) {
      return set_err(
          err, errlen, kInvalidArgument,
          format("VSHMEM_UCX_SPIN_US: %ld is not 0..1000000 microseconds", args.spin_us));
    }
    if (args.spin_us >= 0) us = args.spin_us;  // -1: unset
    idle_spin_ = std::chrono::microseconds(us);
  }
  // Staged transfers: VSHMEM_UCX_CHUNK_KIB, VSHMEM_UCX_CHUNKS (see the defaults' comment; 0:
  // unset).
  const long chunk_kib =
      args.stage_chunk_kib > 0 ? args.stage_chunk_kib : static_cast<long>(kStageChunk >> 10);
  const long depth = args.stage_chunks > 0 ? args.stage_chunks : kStageDepth;
  if (chunk_kib < 4 || chunk_kib > 65536 || depth < 1 || depth > 64) {
    return set_err(err, errlen, kInvalidArgument,
                   format("VSHMEM_UCX_CHUNK_KIB %ld (4..65536) or VSHMEM_UCX_CHUNKS %ld (1..64) "
                          "out of range",
                          chunk_kib, depth));
  }
  stage_chunk_ = static_cast<size_t>(chunk_kib) << 10;
  stage_depth_ = static_cast<int>(depth);
  stage_direct_ = args.stage_direct != 0;
  const bool no_peer_errors = args.no_peer_errors != 0;  // VSHMEM_UCX_PEER_ERRORS=0
  data_ep_ = args.no_data_ep == 0;
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) {
    return set_err(err, errlen, kInvalidArgument,
                   format("UCX configuration (UCX_* variables): %s", ucs_status_string(s)));
  }
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  // Put messages where UCX's own put over TCP is answered per fragment: measured on 1.13 (the
  // 2-core box: 4x the bandwidth, 0.84x the blocking put); on 1.16 (the H200's host) UCX's
  // zero-copy put was 2-4x the messages' bandwidth and put+quiet 0.66x their time
  // (bench/RESULTS.md, issue #13 session 23). 1.14 and 1.15 are not measured.
  // args.put_messages: 0 off, 1 on, 2 auto.
  put_messages_ = args.put_messages == 1 || (args.put_messages == 2 && major == 1 && minor <= 13);
  log(2, format("ucx: puts to a peer over one TCP connection: %s (VSHMEM_UCX_PUT_MESSAGES)",
                put_messages_ ? "vshmem's messages" : "UCX's put"));
  // Get messages whatever the version: UCX 1.16 answers a get over TCP in fragments too
  // (kGetMessageMin).
  get_messages_ = args.get_messages != 0;
  split_gets_ = !(major == 1 && minor <= 13);
  // UCX 1.13's protocols v2 (UCX_PROTO_ENABLE=y, experimental there) crash the process inside
  // libucp once operations start ("stack smashing detected", over TCP and shared memory alike;
  // Open MPI's OSHMEM dies of a segmentation fault with it too): run that UCX with its default
  // protocols, and say so. UCX 1.16, where protocols v2 are the default, runs them.
  if (major == 1 && minor == 13 && config_value(config, "UCX_PROTO_ENABLE") == "y") {
    s = ucp_config_modify(config, "PROTO_ENABLE", "n");
    if (s != UCS_OK) {
      ucp_config_release(config);
      return set_err(err, errlen, kUnsupported,
                     format("UCX %u.%u.%u with UCX_PROTO_ENABLE=y: that UCX's experimental "
                            "protocols v2 crash in libucp, and it refuses PROTO_ENABLE=n (%s); "
                            "unset UCX_PROTO_ENABLE",
                            major, minor, release, ucs_status_string(s)));
    }
    log(1, format("ucx: UCX_PROTO_ENABLE=y ignored: UCX %u.%u.%u's experimental protocols v2 crash "
                  "in libucp (UCX 1.16 and later run them)",
                  major, minor, release));
  }
  // Shared memory (posix) with peer failure handling on UCX 1.16 and later, unless the user
  // decides (UCX_POSIX_ERROR_HANDLING, or UCX_MM_ERROR_HANDLING for every shared-memory
  // transport of that family; the key below is the latter's, which UCX applies to each such
  // transport's settings). UCX offers it there but leaves it off by default, and without it no
  // endpoint that uses shared memory can have it (probe_peer_errors()). Why:
  // - UCX 1.16 ends the survivor when its cross-memory copy (cma) finds the peer gone and the
  //   endpoint has no error handling (uct_cma_ep_tx_error logs at FATAL: ucx_sm_peer_dies
  //   failed that way on the H200, naming no PE); with it, UCX reports the failure on the
  //   endpoint ("PE n failed or exited"), as over TCP. The posix transport attaches to a peer's
  //   segment through /proc/<pid>/fd, which is what lets it check whether the peer lives
  //   (mm_iface.c).
  // - Not on 1.13: there a dead peer only runs into the time limit either way, and the
  //   error-handling endpoints cost staged gets 4-10x their bandwidth over shared memory
  //   (this 2-core box, 64 MiB get in target mode: 0.15-1.0 GB/s against 2.9-4.0).
  // Only where UCX's TLS setting loads a transport of that family (its default loads every one;
  // the TLS of a one-node job, set below, has posix): the key belongs to them, and UCX 1.16 warns
  // "invalid configuration: MM_ERROR_HANDLING=y" at every worker's creation when none is loaded
  // (UCX_TLS=tcp, or rc between nodes).
  const bool sm_errors = major > 1 || (major == 1 && minor >= 16);
  if (sm_errors && args.user_sm_error_handling == 0 && !no_peer_errors &&
      tls_loads_mm(config_value(config, "UCX_TLS").c_str())) {
    s = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
    if (s != UCS_OK) {
      log(1, format("ucx: UCX refuses MM_ERROR_HANDLING=y (%s): shared memory without peer "
                    "failure handling",
                    ucs_status_string(s)));
    }
  }
  if (atomics_ == Atomics::kAuto) {
    s = ucp_config_modify(config, "ATOMIC_MODE", "cpu");
    if (s != UCS_OK) {
      log(1, format("ucx: UCX refuses ATOMIC_MODE=cpu (%s): atomics at the target",
                    ucs_status_string(s)));
      cpu_atomic_mode_ = false;  // still "auto" to init()'s agreement: both kinds are CPU atomics
    }
  }
  // A one-node job loads UCX only for the global and static variables: then one shared-memory
  // transport for messages (posix), cross-memory attach for put/get (cma) and loopback are
  // enough. UCX's default (every transport) would make every such job probe network devices,
  // open TCP interfaces and, where UCX has CUDA support, its GPU transports, at every start; and
  // each further shared-memory transport (sysv) costs its own segments at worker creation. The
  // user's UCX_TLS, when set, still decides.
  const char* user_tls = args.user_tls;
  if (statics_only_ && (user_tls == nullptr || *user_tls == '\0')) {
    s = ucp_config_modify(config, "TLS", kStaticsOnlyTls);
    if (s != UCS_OK) {
      ucp_config_release(config);
      return set_err(err, errlen, kUnsupported,
                     format("UCX refuses TLS=%s: %s", kStaticsOnlyTls, ucs_status_string(s)));
    }
    transports_ =
        format("%s (only global and static variables need UCX: one node)", kStaticsOnlyTls);
  } else if (user_tls != nullptr && *user_tls != '\0') {
    transports_ = format("UCX_TLS=%s", user_tls);
  } else {
    transports_ = "UCX's default (UCX_TLS not set)";
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features =
      UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<size_t>(n_pes_);
  s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) {
    return set_err(err, errlen, kUnsupported,
                   format("ucp_init: %s (check UCX_TLS / UCX_NET_DEVICES)", ucs_status_string(s)));
  }
  ucp_context_attr_t cattr{};
  cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(context_, &cattr) == UCS_OK) {
    cuda_memory_ = (cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  }
  // Not where UCX reaches GPU memory: a get's destination may then be GPU memory, which UCX's get
  // writes and our copy on arrival (on_reply) could not.
  get_messages_ = get_messages_ && !cuda_memory_;
  log(2, format("ucx: gets from a peer over one TCP connection: %s (VSHMEM_UCX_GET_MESSAGES)",
                get_messages_ && split_gets_
                    ? "vshmem's messages from 8 KiB, in 4 of at least 256 KiB below 4 MiB"
                : get_messages_ ? "vshmem's messages from 8 KiB"
                : cuda_memory_  ? "UCX's get (UCX reaches GPU memory)"
                                : "UCX's get"));
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // worker_lock_
  s = ucp_worker_create(context_, &wparams, &worker_);
  if (s != UCS_OK) {
    return set_err(err, errlen, kSystem, format("ucp_worker_create: %s", ucs_status_string(s)));
  }
  const ucp_am_recv_callback_t drop = [](void*, const void*, size_t, void*, size_t,
                                         const ucp_am_recv_param_t*) { return UCS_OK; };
  for (auto [id, cb] : {std::pair<uint16_t, ucp_am_recv_callback_t>{kAmRequest, &on_request},
                        {kAmReply, &on_reply},
                        {kAmHello, drop},
                        {kAmWake, drop},
                        {kAmSignal, &on_signal}}) {
    ucp_am_handler_param_t h{};
    h.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    h.id = id;
    h.cb = cb;
    h.arg = this;
    // Whole messages only; eager data is copied out in the callback (the progress thread performs
    // the request later), rendezvous data is fetched into our own buffer.
    h.flags = UCP_AM_FLAG_WHOLE_MSG;
    s = ucp_worker_set_am_recv_handler(worker_, &h);
    if (s != UCS_OK) {
      return set_err(err, errlen, kSystem,
                     format("ucp_worker_set_am_recv_handler: %s", ucs_status_string(s)));
    }
  }
  int efd = -1;
  s = ucp_worker_get_efd(worker_, &efd);
  if (s != UCS_OK) {
    return set_err(err, errlen, kSystem, format("ucp_worker_get_efd: %s", ucs_status_string(s)));
  }
  worker_fd_ = efd;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_only_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_only_fd_ < 0 || wake_fd_ < 0) {
    return set_err(err, errlen, kSystem, format("epoll/eventfd: %s", std::strerror(errno)));
  }
  // The hand-off's deadline (kHandoffFedMs); without it the progress thread looks every
  // kHandoffMs.
  handoff_timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (handoff_timer_fd_ < 0) {
    log(1,
        format("ucx: timerfd_create: %s (the progress thread wakes every %d ms while handed off)",
               std::strerror(errno), kHandoffMs));
  }
  for (auto [set, fd] : {std::pair<int, int>{epoll_fd_, efd},
                         {epoll_fd_, wake_fd_},
                         {wake_only_fd_, wake_fd_},
                         {wake_only_fd_, handoff_timer_fd_}}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return set_err(err, errlen, kSystem, format("epoll_ctl: %s", std::strerror(errno)));
    }
  }
  // VSHMEM_UCX_PEER_ERRORS=0: no probe, every endpoint goes without (the job agrees in init()).
  peer_errors_ = !no_peer_errors && probe_peer_errors();
  if (no_peer_errors) no_peer_errors_why_ = "VSHMEM_UCX_PEER_ERRORS=0";
  caps_ = VSHMEM_TRANSPORT_CAP_RMA | VSHMEM_TRANSPORT_CAP_TARGET_OPS;
  if (atomics_ == Atomics::kNetwork) caps_ |= VSHMEM_TRANSPORT_CAP_AMO;
  if (cuda_memory_) caps_ |= VSHMEM_TRANSPORT_CAP_DEVICE_MEMORY;
  return 0;
}

bool UcxPath::probe_peer_errors() {
  // Why a probe, and not "try with it, else without" per peer (as before): UCX pairs an endpoint
  // we create with the one the peer created to us (ucp_ep_create looks for an endpoint that the
  // peer's first message already made here), and refuses the pair when their error handling
  // differs. UCX 1.13 then destroys the endpoint it found (ucp_ep.c: "asymmetric endpoint
  // configuration is not supported", UCS_ERR_UNSUPPORTED, err_destroy_ep), while the peer's
  // endpoint still names it: the peer's later messages are taken for another endpoint of ours,
  // and a put's completion reaches an endpoint of the peer still waiting to be paired
  // (ucp_rma_cmpl_handler: Assertion "ep->flags & UCP_EP_FLAG_FLUSH_STATE_VALID",
  // mpe.statics_ptr.vshmemrun.4 about 1 run in 100 on shared memory, where the peer that
  // connected first had been refused peer failure handling and gone without). So every endpoint
  // of the job gets the same mode, decided before any exists: here (one endpoint to our own
  // worker, with the transports UCX_TLS allows, which are those of a peer on this node), then
  // agreed by every PE in init().
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  if (ucp_worker_query(worker_, &attr) != UCS_OK) return false;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = attr.address;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ucp_ep_h ep = nullptr;
  const Clock::time_point t0 = Clock::now();
  // A refusal is the expected answer on shared memory alone: UCX would log it as an error.
  const ucs_log_level_t level = ucs_global_opts.log_component.log_level;
  if (level < UCS_LOG_LEVEL_DIAG) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
  const ucs_status_t s = ucp_ep_create(worker_, &params, &ep);
  ucs_global_opts.log_component.log_level = level;
  ucp_worker_release_address(worker_, attr.address);
  // Kept until shutdown(), closed with the others: a transport that connects endpoint to
  // endpoint (TCP) wires it up with itself meanwhile; waiting for that here cost up to 40 ms.
  if (s == UCS_OK) probe_ep_ = ep;
  if (log_enabled(2)) {
    log(2, format("ucx: peer failure handling %s with these transports (probed in %.3f ms: %s)",
                  s == UCS_OK ? "available" : "not available",
                  std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                  ucs_status_string(s)));
  }
  return s == UCS_OK;
}

void UcxPath::shutdown() {
  if (log_enabled(2)) {
    std::string small;
    const char* kinds[3] = {"puts", "gets", "atomics and signals"};
    for (int k = 0; k < 3; ++k) {
      const uint64_t n = small_[k].count.load();
      if (n == 0) continue;
      const auto us = [n](const std::atomic<uint64_t>& ns) {
        return static_cast<double>(ns.load()) / 1e3 / static_cast<double>(n);
      };
      small += format("%s%llu %s (queued %.2f us, performed and answered in %.2f us, max %.1f)",
                      small.empty() ? "" : ", ", static_cast<unsigned long long>(n), kinds[k],
                      us(small_[k].queue_ns), us(small_[k].perform_ns),
                      static_cast<double>(small_[k].perform_max_ns.load()) / 1e3);
    }
    if (!small.empty()) log(2, "ucx: peers' small target ops served, per op: " + small);
  }
  if (const uint64_t n = served_.chunks.load(); n != 0 && log_enabled(2)) {
    const auto us = [n](const std::atomic<uint64_t>& ns) {
      return static_cast<double>(ns.load()) / 1e3 / static_cast<double>(n);
    };
    log(2, format("ucx: served %llu staged chunks of peers (%.1f MiB, %llu direct): per chunk, "
                  "data fetched %.1f us after the request (rendezvous), queued %.1f us, copied "
                  "and answered in %.1f us",
                  static_cast<unsigned long long>(n),
                  static_cast<double>(served_.bytes.load()) / (1 << 20),
                  static_cast<unsigned long long>(served_.direct.load()), us(served_.fetch_ns),
                  us(served_.queue_ns), us(served_.copy_ns)));
  }
  if (const uint64_t d = chunks_direct_.load(), c = chunks_carried_.load();
      d + c != 0 && log_enabled(2)) {
    log(2, format("ucx: staged chunks of ours: %llu direct (the target's copy read or wrote our "
                  "staging buffers), %llu carried in UCX messages",
                  static_cast<unsigned long long>(d), static_cast<unsigned long long>(c)));
  }
  stopping_.store(true);
  wake();
  if (progress_thread_.joinable()) progress_thread_.join();
  if (worker_ != nullptr) {
    // Teardown order (UCX 1.16's TCP transport asserts, tcp_ep.c "ucs_queue_is_empty(&ep->
    // pending_q)", when an endpoint is force-closed while operations are still queued on it: the
    // discarded lane's queue is dispatched later, when its connection changes state). So:
    // (1) the progress thread is stopped (above): one thread drives the worker from here on;
    // (2) what we started completes: _nbi requests, posted signals, replies in flight (a worker
    //     flush, bounded: a peer may be gone already);
    // (3) endpoints close in flush mode, force only to a peer known failed, and the closes are
    //     progressed to their end (bounded) before the worker is destroyed.
    const Hold hold(worker_lock_);  // for the whole teardown
    const auto until = Clock::now() + kCloseWait;
    bool serve = true;  // answer peers' requests until we close (no endpoint is made after)
    const auto drive = [&](void* r) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < until) {
        if (ucp_worker_progress(worker_) == 0 && serve) run_work();
      }
      ucp_request_free(r);
    };
    {
      std::vector<std::pair<int, void*>> pending;
      {
        std::lock_guard<std::mutex> lock(nbi_mutex_);
        pending.swap(nbi_);
        nbi_count_.store(0, std::memory_order_relaxed);
      }
      for (auto [pe, r] : pending) drive(r);
      // _nbi get messages nobody quieted: their replies, or the time limit (then forgotten).
      std::vector<std::unique_ptr<GetMessage>> gets;
      {
        std::lock_guard<std::mutex> lock(nbi_mutex_);
        gets.swap(nbi_gets_);
        nbi_gets_count_.store(0, std::memory_order_relaxed);
      }
      for (auto& m : gets) {
        while (!m->op.done.load(std::memory_order_acquire) && Clock::now() < until) {
          if (ucp_worker_progress(worker_) == 0) run_work();
        }
      }
      ucp_request_param_t param{};
      void* r = ucp_worker_flush_nbx(worker_, &param);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) drive(r);
    }
    serve = false;
    std::vector<void*> closing;
    if (probe_ep_ != nullptr) {
      ucp_request_param_t param{};
      void* r = ucp_ep_close_nbx(probe_ep_, &param);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
      probe_ep_ = nullptr;
    }
    for (Peer& p : peers_) {
      ucp_ep_h ep = p.ep.exchange(nullptr);
      if (ep == nullptr) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = p.failure.load() != UCS_OK ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      void* r = ucp_ep_close_nbx(ep, &param);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
      if (p.other != nullptr) {
        r = ucp_ep_close_nbx(p.other, &param);
        if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
        p.other = nullptr;
      }
    }
    for (void* r : closing) drive(r);
    for (Peer& p : peers_) p.last_rkey.store(nullptr, std::memory_order_relaxed);
    for (Region& region : regions_) {
      for (const std::unique_ptr<RkeyHit>& k : region.unpacked) {
        if (k != nullptr) ucp_rkey_destroy(k->rkey);
      }
      if (region.memh != nullptr) ucp_mem_unmap(context_, region.memh);
    }
    regions_.clear();
    {
      std::lock_guard<std::mutex> lock(work_mutex_);
      work_.clear();
    }
    {
      // Copies still running use staging buffers, freed below: let them end (bounded).
      std::lock_guard<std::mutex> lock(copies_mutex_);
      for (RunningCopy& c : copies_) {
        int done = 0;
        while (host_.copy_test(host_.ctx, c.ticket, &done, nullptr, 0) == 0 && done == 0 &&
               Clock::now() < until) {
          sched_yield();
        }
      }
      copies_.clear();
      copies_count_.store(0);
    }
    // Peers' staging segments mapped here (direct staging): no copy of ours uses them now.
    for (Peer& p : peers_) {
      std::lock_guard<std::mutex> lock(p.mapped_mutex);
      uint8_t* base = p.mapped_base.exchange(nullptr);
      if (base != nullptr) host_.unregister_host(host_.ctx, base);
      if (p.mapped_rkey != nullptr) ucp_rkey_destroy(p.mapped_rkey);
      p.mapped_rkey = nullptr;
    }
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  // Our staging segment, after the worker (UCX may have used it until then). A peer that still
  // maps it keeps the shared memory alive until it unmaps it or exits.
  if (segment_.memh != nullptr) {
    if (segment_.registered) host_.unregister_host(host_.ctx, segment_.base);
    ucp_mem_unmap(context_, segment_.memh);
    segment_.memh = nullptr;
    segment_.registered = false;
  }
  // After the worker: UCX may have used them until then.
  for (void* p : staging_all_) host_.free_staging(host_.ctx, p);
  staging_all_.clear();
  staging_free_.clear();
  if (context_ != nullptr) ucp_cleanup(context_);
  context_ = nullptr;
  for (int fd : {epoll_fd_, wake_only_fd_, wake_fd_, handoff_timer_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  epoll_fd_ = wake_only_fd_ = wake_fd_ = handoff_timer_fd_ = -1;
}

bool UcxPath::arm_handoff_timer(int ms) const {
  itimerspec when{};
  when.it_value.tv_nsec = static_cast<long>(ms) * 1000000;
  return handoff_timer_fd_ >= 0 && ::timerfd_settime(handoff_timer_fd_, 0, &when, nullptr) == 0;
}

void UcxPath::progress_loop() {
  (void)pthread_setname_np(pthread_self(), "vshmem-ucx");  // in top -H, gdb, /proc/PID/task
  // The application moves the network itself: sleep, and take over once it has not polled for a
  // whole window (or we are woken).
  uint64_t seen_polls = app_polls_.load(std::memory_order_relaxed);
  const auto hand_off = [&] {
    seen_polls = app_polls_.load(std::memory_order_relaxed);
    // Where CPUs are scarce: until the deadline the application pushes while it polls. The first
    // one is short (kHandoffFirstMs: a caller that polled a moment, then computes, is not left
    // for a whole window), and the application may push it at its next look at the clock. No
    // timer (timerfd_create or timerfd_settime failed): look every kHandoffMs.
    int sleep_ms = kHandoffMs;
    if (!cpus_to_spare_) {
      handoff_fed_ns_.store((Clock::now() - kHandoffPushEvery).time_since_epoch().count(),
                            std::memory_order_relaxed);
      if (arm_handoff_timer(kHandoffFirstMs)) {
        sleep_ms = -1;
        handoff_fed_.store(true, std::memory_order_relaxed);
      }
    }
    epoll_event ev;
    const int n = ::epoll_wait(wake_only_fd_, &ev, 1, sleep_ms);
    handoff_fed_.store(false, std::memory_order_relaxed);
    if (n > 0) {
      uint64_t v;
      (void)!::read(ev.data.fd, &v, sizeof(v));  // the wake-up's count, or the timer's
      // The deadline passed without a push: the application stopped polling (perhaps after
      // polling early in the window): take over now, unless it waits in a call.
      if (ev.data.fd == handoff_timer_fd_) seen_polls = app_polls_.load(std::memory_order_relaxed);
    }
  };
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (app_waiters_.load(std::memory_order_relaxed) > 0 ||
        app_polls_.load(std::memory_order_relaxed) != seen_polls) {
      hand_off();
      continue;
    }
    if (run_work() != 0) note_busy();
    if (progress_once() != 0) continue;
    if (work_count_.load(std::memory_order_acquire) != 0) continue;
    if (copies_count_.load(std::memory_order_acquire) != 0) continue;  // answered when done
    if (recently_busy()) continue;  // the idle spin (kIdleSpinUs) before sleeping
    ucs_status_t s = UCS_ERR_BUSY;
    {
      const Turn turn(worker_lock_, std::try_to_lock);
      if (!turn.owns_lock()) {
        // An application thread progresses the worker between two of its polls. Where the CPUs
        // are scarce, hand off too: going back to the top spun on this lock while the
        // application polled (a PE in a barrier that serves a peer's puts: 6 million failed
        // try-locks in 0.2 s, a core taken from the application threads of a 2-core machine).
        // Where they are not, the two threads take turns at polling, which serves a peer's
        // gets sooner (on the 16-CPU H200 host, 1 MiB get 1.61 GB/s with the hand-off against
        // 1.92 without, bench/RESULTS.md, issue #13 session 16).
        if (!cpus_to_spare_) hand_off();
        continue;
      }
      s = ucp_worker_arm(worker_);
    }
    if (s == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    // The bound only limits how late a transport without wake-up events is progressed.
    int n = ::epoll_wait(epoll_fd_, events, 2, s == UCS_OK ? 100 : 1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof(v));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Endpoints, rkeys, waits.

int UcxPath::peer_error(int pe, const char* what, ucs_status_t status, char* err, size_t errlen) {
  // "Failed or exited" only when the peer is gone (the endpoint's error handler reported it, or
  // UCX completed the request with a connection failure); else UCX itself could not carry the
  // operation (ucx_status.hpp).
  bool peer_failed = peers_[pe].failure.load(std::memory_order_acquire) != UCS_OK;
  if (!peer_failed && !vshmem::ucx_status_means_peer_lost(status)) {
    // UCX may complete the requests of a failing endpoint (cancelled) before it calls the
    // endpoint's error handler: give the handler a moment before calling the peer alive.
    const auto until = Clock::now() + std::chrono::milliseconds(100);
    while (!peer_failed && Clock::now() < until) {
      if (progress_once() == 0) sched_yield();
      peer_failed = peers_[pe].failure.load(std::memory_order_acquire) != UCS_OK;
    }
  }
  const bool lost = peer_failed || vshmem::ucx_status_means_peer_lost(status);
  return set_err(err, errlen, lost ? kPeerFailure : kSystem,
                 vshmem::ucx_failure_text(what, pe, status, peer_failed, transports_));
}

int UcxPath::failed_peer(char* err, size_t errlen) const {
  for (const Peer& peer : peers_) {
    const int failed = peer.failure.load(std::memory_order_acquire);
    if (failed == UCS_OK) continue;
    if (err != nullptr && errlen > 0) {
      std::snprintf(err, errlen, "UCX: %s", ucs_status_string(static_cast<ucs_status_t>(failed)));
    }
    return peer.pe;
  }
  return -1;
}

int UcxPath::ep_create(int pe, const char* what, ucp_ep_h* out, char* err, size_t errlen) {
  Peer& peer = peers_[pe];
  const int failed = peer.failure.load(std::memory_order_acquire);
  if (failed != UCS_OK) return peer_error(pe, what, static_cast<ucs_status_t>(failed), err, errlen);
  std::lock_guard<std::mutex> lock(peer.connect_mutex);
  ucp_ep_h ep = peer.ep.load(std::memory_order_acquire);  // another thread may have created it
  if (ep == nullptr) {
    if (peer.address.empty()) {
      return set_err(err, errlen, kInvalidArgument,
                     format("%s PE %d: it has no UCX worker (not a remote peer)", what, pe));
    }
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(peer.address.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t status) {
      auto* p = static_cast<Peer*>(arg);
      p->failure.store(status, std::memory_order_release);
      p->owner->wake();
    };
    params.err_handler.arg = &peer;
    ucs_status_t s = UCS_ERR_UNREACHABLE;
    bool with_errors = false;  // the endpoint that carries the operations has peer failure handling
    if (peer_errors_) {
      // Every PE asks for the same mode (probe_peer_errors(), agreed in init()). A peer whose
      // transports differ from the probe's (another node, other devices) may still be out of
      // reach with it, in both directions: both ends then go without, below (or, when the
      // peer's endpoint reached us first, UCX refuses the pair: the error that follows).
      s = locked([&] { return ucp_ep_create(worker_, &params, &ep); });
      with_errors = s == UCS_OK;
      if (s == UCS_ERR_UNSUPPORTED) {
        // The peer's endpoint to us came without it: UCX refused the pair and has dropped our
        // side of the peer's endpoint, which can no longer be used (see probe_peer_errors()).
        return set_err(err, errlen, kSystem,
                       format("%s PE %d: UCX paired its endpoint to this PE with one of other "
                              "error handling and refused it (%s); do the PEs use other "
                              "UCX_TLS or UCX_NET_DEVICES? transports: %s",
                              what, pe, ucs_status_string(s), transports_.c_str()));
      }
    }
    if (s == UCS_ERR_UNREACHABLE) {
      // No peer failure handling on these transports (UCX 1.13's shared memory): reach the peer
      // without it; the time limit of every wait still notices a dead or silent peer.
      params.field_mask &= ~(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER);
      s = locked([&] { return ucp_ep_create(worker_, &params, &ep); });
      if (s == UCS_OK && peer_errors_) {
        log(2, format("ucx: PE %d reached without peer failure handling (its transports lack it)",
                      pe));
      }
    }
    if (s != UCS_OK) {
      return set_err(
          err, errlen, kPeerFailure,
          format("%s PE %d: cannot reach it over UCX: %s", what, pe, ucs_status_string(s)));
    }
    if (int r = connect(pe, ep, what, err, errlen)) {
      close_unconnected(ep);
      return r;
    }
    if (peer_errors_ && data_ep_) {
      if (ucp_ep_h data = make_data_ep(pe, peer, ep)) {
        ep = data;
        with_errors = false;
      }
    }
    peer.ucx_atomics = atomics_ == Atomics::kNetwork ||
                       (atomics_ == Atomics::kAuto && cpu_atomic_mode_ && !with_errors);
    const bool messages = !heap_is_device_ && !peer.device_heap && one_tcp_lane(ep);
    peer.put_messages = put_messages_ && messages;
    peer.get_messages = get_messages_ && messages;
    if (atomics_ == Atomics::kAuto && log_enabled(2)) {
      log(2, format("ucx: PE %d: atomics on its host heap %s", pe,
                    peer.ucx_atomics ? "by UCX (CPU mode)"
                    : with_errors    ? "at the target (the endpoint has peer failure handling)"
                                     : "at the target (UCX refused ATOMIC_MODE=cpu)"));
    }
    peer.ep.store(ep, std::memory_order_release);
  }
  *out = ep;
  return 0;
}

int UcxPath::connect(int pe, ucp_ep_h ep, const char* what, char* err, size_t errlen) {
  // UCX creates an endpoint at once but sets its connections up lazily, and an operation posted
  // meanwhile waits in the pending queue of a transport connection that is not up yet. UCX 1.16's
  // TCP transport aborts when such a queued operation, run as the connection comes up, first
  // needs the peer's endpoint id (gets, fetching and emulated atomics, replies: it then asks the
  // peer for the id and stays queued, tcp_ep.c "Assertion ucs_queue_is_empty(&ep->pending_q)"),
  // which happens when two PEs reach each other for the first time at once. So nothing of ours
  // is posted until the endpoint is wired up:
  // (1) a message that must carry our endpoint's id at the peer (UCP_AM_SEND_FLAG_REPLY): UCX
  //     resolves the id, a wire-up round trip with the peer, before the message leaves;
  // (2) an endpoint flush: every transport connection of the endpoint (TCP has one per network
  //     device) is up and drained.
  // Performing peers' requests meanwhile could need this very endpoint: not done here (the other
  // threads, and the peer, need only UCX's own progress for this).
  const Clock::time_point t0 = Clock::now();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  // The header is a member: UCX may still read it after a wait that gave up.
  void* hello = locked(
      [&] { return ucp_am_send_nbx(ep, kAmHello, &my_pe_, sizeof(my_pe_), nullptr, 0, &param); });
  if (int r = wait(hello, pe, what, err, errlen, false)) return r;
  ucp_request_param_t fparam{};
  void* flush = locked([&] { return ucp_ep_flush_nbx(ep, &fparam); });
  if (int r = wait(flush, pe, what, err, errlen, false)) return r;
  if (log_enabled(2)) {
    log(2, format("ucx: endpoint to PE %d wired up in %.3f ms", pe,
                  std::chrono::duration<double, std::milli>(Clock::now() - t0).count()));
  }
  return 0;
}

// What ucp_ep_print_info says of an endpoint: its lanes, one line each ("lane[0]:  1:tcp/lo.0
// md[1] -> ... rma_bw#0 am am_bw#0"), the form of UCX 1.13 to 1.16. Empty when it cannot say.
std::string UcxPath::endpoint_info(ucp_ep_h ep) {
  const Hold hold(worker_lock_);
  return printed_by([&](FILE* f) { ucp_ep_print_info(ep, f); });
}

// The transports of an endpoint's lanes ("tcp", "cma", "rc_mlx5"), and whether one of them
// carries bulk RMA (a zero-copy put), from endpoint_info().
struct Lanes {
  std::vector<std::string> transports;
  bool rma_bw = false;
};
Lanes lanes_of(const std::string& info) {
  Lanes lanes;
  size_t at = 0;
  while ((at = info.find("lane[", at)) != std::string::npos) {
    const size_t end = std::min(info.find('\n', at), info.size());
    const std::string line = info.substr(at, end - at);
    at = end;
    // "lane[0]:  1:tcp/lo.0 md[1] ...": the name between the resource's "N:" and its "/".
    const size_t colon = line.find(':', line.find("]:") + 2);
    const size_t slash = line.find('/', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || slash == std::string::npos) return {};
    lanes.transports.push_back(line.substr(colon + 1, slash - colon - 1));
    if (line.find("rma_bw#") != std::string::npos) lanes.rma_bw = true;
  }
  return lanes;
}

bool tcp_only(const Lanes& l) {
  return !l.transports.empty() && std::all_of(l.transports.begin(), l.transports.end(),
                                              [](const std::string& t) { return t == "tcp"; });
}

bool UcxPath::one_tcp_lane(ucp_ep_h ep) {
  const Lanes lanes = lanes_of(endpoint_info(ep));
  return lanes.transports.size() == 1 && tcp_only(lanes);
}

// Endpoints with peer failure handling over TCP. UCX (1.13 and 1.16) gives such an endpoint no
// zero-copy put lane over TCP (the TCP memory domain lacks the memory invalidation those lanes
// need) and emulates its puts with active messages: about a fifth of the bandwidth, and two round
// trips for a put and its flush (bench/RESULTS.md, issue #13, sessions 13-15). So where a peer's
// first endpoint has no bulk RMA lane, a second one without failure handling, the data endpoint,
// carries every operation to that peer (the TCP transport's zero-copy put, as OSHMEM's endpoints
// get it), and the first one stays connected to watch the peer: its error callback still marks
// the peer failed, and a transfer on the data endpoint fails too when the TCP connection breaks.
// One endpoint for the data keeps UCX's ordering (fence, a get after a put) what it is.
// - The data endpoint is used only where every lane of it is TCP: over shared memory UCX 1.16
//   ends a survivor whose cross-memory copy meets a dead peer on an endpoint without error
//   handling (see setup()). Otherwise it is closed at the end, unused.
// - UCX pairs the endpoints two workers make to each other in the order they make them, and
//   refuses a pair of different error handling (probe_peer_errors()): each PE makes the data
//   endpoint right after the first one to that peer, by the same rule, so that the k-th
//   endpoints of both sides have the same mode (a side that never makes them serves the other's
//   through endpoints UCX made for them).
ucp_ep_h UcxPath::make_data_ep(int pe, Peer& peer, ucp_ep_h first) {
  // Not where the first endpoint puts with zero copy already, nor where it runs over other
  // transports than TCP (a data endpoint would get them too, and not be used), nor where its
  // lanes are unknown. Both ends of a pair see the same lanes: they decide alike.
  const Lanes lanes_first = lanes_of(endpoint_info(first));
  if (lanes_first.rma_bw || !tcp_only(lanes_first)) return nullptr;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(peer.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucp_ep_h data = nullptr;
  ucs_status_t s = locked([&] { return ucp_ep_create(worker_, &params, &data); });
  char e[512] = {};
  if (s != UCS_OK || connect(pe, data, "data endpoint to", e, sizeof(e)) != 0) {
    if (s == UCS_OK) close_unconnected(data);
    log(2, format("ucx: PE %d: no data endpoint (%s): puts to it are emulated", pe,
                  s != UCS_OK ? ucs_status_string(s) : e));
    return nullptr;
  }
  const Lanes lanes = lanes_of(endpoint_info(data));
  const bool usable = lanes.rma_bw && tcp_only(lanes);
  if (log_enabled(2)) {
    std::string names;
    for (const std::string& t : lanes.transports) names += (names.empty() ? "" : ",") + t;
    log(2, usable ? format("ucx: PE %d: a data endpoint without peer failure handling carries the "
                           "operations (lanes %s: zero-copy put); the endpoint with it watches "
                           "the peer",
                           pe, names.c_str())
                  : format("ucx: PE %d: data endpoint not used (lanes %s%s: not TCP only, or no "
                           "zero-copy put)",
                           pe, names.c_str(), lanes.rma_bw ? "" : ", none for bulk RMA"));
  }
  peer.other = usable ? first : data;
  return usable ? data : nullptr;
}

ucp_rkey_h UcxPath::rkey_lookup(int pe, ucp_ep_h ep, uint64_t offset, size_t bytes, size_t* span) {
  Peer& peer = peers_[pe];
  std::lock_guard<std::mutex> lock(mutex_);
  for (Region& r : regions_) {
    if (offset < r.offset || offset >= r.offset + r.bytes) continue;
    *span = std::min<size_t>(bytes, r.offset + r.bytes - offset);
    if (r.packed[pe].empty()) return nullptr;
    ucp_rkey_h rkey = nullptr;
    if (r.unpacked[pe] == nullptr) {
      if (locked([&] { return ucp_ep_rkey_unpack(ep, r.packed[pe].data(), &rkey); }) != UCS_OK) {
        return nullptr;
      }
      r.unpacked[pe] = std::make_unique<RkeyHit>(RkeyHit{r.offset, r.offset + r.bytes, rkey});
    }
    peer.last_rkey.store(r.unpacked[pe].get(), std::memory_order_release);
    return r.unpacked[pe]->rkey;
  }
  *span = bytes;
  return nullptr;
}

VSHMEM_HOT int UcxPath::wait_request(void* request, int pe, const char* what, char* err,
                                     size_t errlen, bool serve) {
  if (UCS_PTR_IS_ERR(request)) return peer_error(pe, what, UCS_PTR_STATUS(request), err, errlen);
  // A short wait (an 8-byte get or atomic: a round trip) does not register as the progress
  // thread's reason to stay off the worker, two atomic read-modify-writes an operation: that
  // thread is handed off already if we polled within its last sleep (note_app_poll() below),
  // and if it is not, the two take turns (Turn). A wait that lasts registers.
  std::optional<AppWait> app;
  // The time limit counts from the first yield: no clock read on the path of a request that
  // completes within a few polls (every 8-byte get and atomic).
  Clock::time_point until{};
  for (unsigned spins = 0;; ++spins) {
    ucs_status_t s = ucp_request_check_status(request);  // reads the request: no lock
    if (s != UCS_INPROGRESS) {
      free_request(request);
      if (!app) note_app_poll();
      return s == UCS_OK ? 0 : peer_error(pe, what, s, err, errlen);
    }
    if (progress_once() != 0) continue;
    // The progress thread is handed off while we wait: perform what peers asked of us.
    if (serve && run_work() != 0) continue;
    if (spins % 256 == 255) {
      if (!app) app.emplace(*this);
      const Clock::time_point now = Clock::now();
      still_polling(now);
      if (until == Clock::time_point{}) {
        until = now + timeout_;
      } else if (now > until) {
        free_request(request);  // released by UCX whenever it completes
        return set_err(err, errlen, kTimeout,
                       format("%s PE %d: no progress for %s (PE %d may be hung or overloaded; "
                              "VSHMEM_BOOTSTRAP_TIMEOUT sets the limit)",
                              what, pe, seconds().c_str(), pe));
      }
      if (peers_[pe].failure.load(std::memory_order_acquire) != UCS_OK) continue;
      sched_yield();  // PEs may outnumber cores: let the peer (or our progress thread) run
    }
  }
}

int UcxPath::fence(char* err, size_t errlen) {
  // ucp_worker_fence: operations issued on an endpoint before it complete before those issued
  // after it (UCX's own guarantee; where a transport does not order by itself, UCX flushes). A
  // local call, where a flush costs a round trip. Target ops need nothing: they completed when
  // they returned.
  const uint64_t posted = posted_.load(std::memory_order_acquire);
  const uint64_t issued = posted + messaged_.load(std::memory_order_acquire);
  if (fenced_.load(std::memory_order_acquire) >= issued &&
      flushed_.load(std::memory_order_acquire) >= posted) {
    return 0;
  }
  ucs_status_t s = locked([&] { return ucp_worker_fence(worker_); });
  if (s != UCS_OK) {
    return set_err(err, errlen, kPeerFailure,
                   format("ordering the transfers (fence): %s", ucs_status_string(s)));
  }
  uint64_t f = fenced_.load(std::memory_order_relaxed);
  while (f < issued && !fenced_.compare_exchange_weak(f, issued)) {
  }
  return 0;
}

void UcxPath::keep_nbi(int pe, void* request) {
  if (request == nullptr) return;
  std::lock_guard<std::mutex> lock(nbi_mutex_);
  nbi_.emplace_back(pe, request);
  nbi_count_.store(nbi_.size(), std::memory_order_release);
}

int UcxPath::quiet(char* err, size_t errlen) {
  unordered_.store(false, std::memory_order_release);
  // The _nbi operations' own requests first: UCX 1.13's worker flush can return before a get
  // issued over shared memory has delivered its data.
  std::vector<std::pair<int, void*>> pending;
  if (nbi_count_.load(std::memory_order_acquire) != 0) {  // no lock after blocking operations
    std::lock_guard<std::mutex> lock(nbi_mutex_);
    pending.swap(nbi_);
    nbi_count_.store(0, std::memory_order_release);
  }
  int failed = 0;
  for (auto [pe, request] : pending) {
    if (failed != 0) {
      free_request(request);
      continue;
    }
    failed = wait(request, pe, "completing a transfer with", err, errlen);
  }
  if (failed != 0) return failed;
  if (nbi_gets_count_.load(std::memory_order_seq_cst) != 0 || completing_gets_.under_way()) {
    if (int r = complete_nbi_gets(err, errlen)) return r;
  }
  if (unconfirmed_peers_.load(std::memory_order_seq_cst) != 0 || confirming_.under_way()) {
    if (int r = confirm_put_messages(err, errlen)) return r;
  }
  // Nothing posted since the last completed flush (a barrier after gets and atomics only, say):
  // no round trip.
  const uint64_t posted = posted_.load(std::memory_order_acquire);
  if (flushed_.load(std::memory_order_acquire) >= posted) return 0;
  int done = flush_worker(err, errlen);
  if (done == 0) {
    uint64_t f = flushed_.load(std::memory_order_relaxed);
    while (f < posted && !flushed_.compare_exchange_weak(f, posted)) {
    }
    send_wakes();
  }
  return done;
}

void UcxPath::send_wakes() {
  // Posted, not waited for: a lost wake costs the sleeper only its bounded sleep. At most one per
  // peer per kWakeGapNs: a wait sleeps only after it has lasted that long
  // (Backoff::kNetworkSleepAfterNs), and a put+quiet loop must not pay a message per quiet (up
  // to 2x the 8-byte put+quiet latency over shared memory on the loaded 2-core box). A put that
  // falls in the gap is seen at the end of the sleeper's bounded sleep (VSHMEM_WAIT_LOOK_US).
  const int64_t now = Clock::now().time_since_epoch().count();
  for (Peer& peer : peers_) {
    if (!peer.wake_due.load(std::memory_order_relaxed)) continue;
    if (now - peer.woken_ns.load(std::memory_order_relaxed) < kWakeGapNs) continue;
    if (!peer.wake_due.exchange(false)) continue;
    peer.woken_ns.store(now, std::memory_order_relaxed);
    ucp_ep_h ep = peer.ep.load(std::memory_order_acquire);
    if (ep == nullptr || peer.failure.load(std::memory_order_acquire) != UCS_OK) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    // A callback: under the progressing thread's turn.
    param.cb.send = [](void* request, ucs_status_t, void*) { ucp_request_free(request); };
    const Hold hold(worker_lock_);
    (void)ucp_am_send_nbx(ep, kAmWake, &my_pe_, sizeof(my_pe_), nullptr, 0, &param);
  }
}

int UcxPath::flush_worker(char* err, size_t errlen) {
  ucp_request_param_t param{};
  void* r = locked([&] { return ucp_worker_flush_nbx(worker_, &param); });
  if (r == nullptr) return 0;
  if (UCS_PTR_IS_ERR(r)) {
    return set_err(err, errlen, kSystem,
                   format("completing the transfers: UCX refused the flush: %s",
                          ucs_status_string(UCS_PTR_STATUS(r))));
  }
  AppWait app(*this);
  const auto until = deadline();
  for (unsigned spins = 0;; ++spins) {
    ucs_status_t s = ucp_request_check_status(r);
    if (s != UCS_INPROGRESS) {
      free_request(r);
      if (s == UCS_OK) return 0;
      std::string who;
      for (const Peer& p : peers_) {
        if (p.failure.load() != UCS_OK) who += format("%sPE %d", who.empty() ? "" : ", ", p.pe);
      }
      if (who.empty() && !vshmem::ucx_status_means_peer_lost(s)) {
        return set_err(err, errlen, kSystem,
                       format("completing the transfers: UCX failed the flush: %s (a transport "
                              "or protocol failure of UCX; no peer is reported failed; "
                              "transports: %s)",
                              ucs_status_string(s), transports_.c_str()));
      }
      return set_err(err, errlen, kPeerFailure,
                     format("completing the transfers: %s (failed: %s)", ucs_status_string(s),
                            who.empty() ? "a peer (UCX did not say which)" : who.c_str()));
    }
    if (progress_once() != 0) continue;
    // The progress thread is handed off while we wait: perform what peers asked of us.
    if (run_work() != 0) continue;
    if (spins % 256 == 255) {
      if (Clock::now() > until) {
        free_request(r);
        return set_err(err, errlen, kTimeout,
                       format("completing the transfers: no progress for %s (a remote PE may be "
                              "hung; VSHMEM_BOOTSTRAP_TIMEOUT sets the limit)",
                              seconds().c_str()));
      }
      sched_yield();
    }
  }
}

VSHMEM_HOT void UcxPath::wait_event(int timeout_us, int spin_us) {
  // The progress thread stays off the worker meanwhile (hand-off): what arrives is ours to
  // handle, and the kernel wakes us when it does (no core spent on polling, or on yielding to
  // whoever else runs on a busy machine).
  AppWait app(*this);
  // What a message asks of us is performed before returning (no wake-up of the progress thread).
  const auto serve_once = [this] {
    unsigned moved = 0;
    {
      const WorkFollows follows;
      moved = progress_once();
    }
    return run_work() + moved != 0;
  };
  if (serve_once()) return;
  // Copies of target ops are running: their answers are due within microseconds, and no event
  // of the worker's file descriptor says when.
  if (copies_count_.load(std::memory_order_acquire) != 0) return;
  // The idle spin (kIdleSpinUs), or the caller's longer one (a PE whose waits spin): right after
  // traffic the next message usually follows within microseconds; polling for it costs less
  // than the kernel's wake-up from ppoll (tens of microseconds, each request of a peer's loop).
  const Clock::duration spin = std::max<Clock::duration>(
      idle_spin_, std::chrono::duration_cast<Clock::duration>(std::chrono::microseconds(spin_us)));
  while (recently_busy(spin)) {
    if (serve_once()) return;
  }
  ucs_status_t s = UCS_ERR_BUSY;
  {
    const Turn turn(worker_lock_, std::try_to_lock);
    if (!turn.owns_lock()) {
      sched_yield();  // another thread progresses the worker right now
      return;
    }
    s = ucp_worker_arm(worker_);  // UCS_ERR_BUSY: something arrived since the progress above
  }
  if (s != UCS_OK) return;
  pollfd fd{worker_fd_, POLLIN, 0};
  timespec ts{timeout_us / 1000000, static_cast<long>(timeout_us % 1000000) * 1000};
  (void)::ppoll(&fd, 1, &ts, nullptr);
}

// ---------------------------------------------------------------------------------------------
// The heap's regions.

int UcxPath::add_region(uint64_t offset, size_t bytes, char* err, size_t errlen) {
  // After serve(), served from now on: a peer that finished this step may address the region
  // right away. Before it (shmem_init), at serve(), once init has filled what it fills.
  added_ = std::max<uint64_t>(added_, offset + bytes);
  if (serving_) committed_.store(added_, std::memory_order_release);
  return register_region(offset, reinterpret_cast<void*>(heap_base_ + offset), bytes,
                         heap_is_device_, err, errlen);
}

void UcxPath::serve() {
  // A release store after shmem_init's fills (the same thread), read with acquire by whoever
  // performs a peer's operation (on_signal, perform()).
  serving_ = true;
  committed_.store(added_, std::memory_order_release);
}

int UcxPath::register_region(uint64_t offset, void* local, size_t bytes, bool device, char* err,
                             size_t errlen) {
  const char* what = (offset & kStatic) != 0 ? "global and static variable" : "heap";
  char local_err[512] = {};
  int rc = 0;
  Region region;
  region.offset = offset;
  region.bytes = bytes;
  std::vector<uint8_t> packed;
  if (network_rma_ && (!device || cuda_memory_)) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = local;
    mp.length = bytes;
    ucs_status_t s = ucp_mem_map(context_, &mp, &region.memh);
    if (s == UCS_OK) {
      void* buf = nullptr;
      size_t len = 0;
      s = ucp_rkey_pack(context_, region.memh, &buf, &len);
      if (s == UCS_OK) {
        auto* b = static_cast<const uint8_t*>(buf);
        packed.assign(b, b + len);
        ucp_rkey_buffer_release(buf);
      }
    }
    if (s != UCS_OK) {
      region.memh = nullptr;
      if (device || (offset & kStatic) != 0) {
        // GPU memory UCX would not register, or global and static variables it would not (the
        // segment starts with pages made read-only after relocation, which an RDMA registration
        // for remote writes refuses): peers reach it through our progress thread.
        log(2, format("ucx: %s region [%#llx, +%zu) not registered (%s): target ops instead", what,
                      static_cast<unsigned long long>(offset & ~kStatic), bytes,
                      ucs_status_string(s)));
      } else {
        rc = set_err(local_err, sizeof(local_err), kSystem,
                     format("ucp_mem_map of %zu %s bytes: %s", bytes, what, ucs_status_string(s)));
      }
    }
  }
  struct Info {
    uint64_t bytes;
    int32_t ok;
    int32_t reserved;
  } mine{packed.size(), rc == 0 ? 1 : 0, 0};
  std::vector<Info> all(static_cast<size_t>(n_pes_));
  if (int r = allgather(&mine, all.data(), sizeof(mine), err, errlen)) {
    if (region.memh != nullptr) ucp_mem_unmap(context_, region.memh);
    return r;
  }
  size_t longest = 0;
  for (const Info& i : all) longest = std::max<size_t>(longest, i.bytes);
  std::vector<uint8_t> padded(longest), gathered(longest * static_cast<size_t>(n_pes_));
  if (!packed.empty()) std::memcpy(padded.data(), packed.data(), packed.size());  // no rkey: none
  if (longest > 0) {
    if (int r = allgather(padded.data(), gathered.data(), longest, err, errlen)) {
      if (region.memh != nullptr) ucp_mem_unmap(context_, region.memh);
      return r;
    }
  }
  if (rc != 0) return set_err(err, errlen, rc, local_err);
  for (int p = 0; p < n_pes_; ++p) {
    if (!all[p].ok) {
      if (region.memh != nullptr) ucp_mem_unmap(context_, region.memh);
      return set_err(
          err, errlen, kPeerFailure,
          format("PE %d could not register its %s memory with UCX (see its message)", p, what));
    }
  }
  region.packed.resize(static_cast<size_t>(n_pes_));
  region.unpacked.resize(static_cast<size_t>(n_pes_));
  for (int p = 0; p < n_pes_; ++p) {
    const uint8_t* b = gathered.data() + static_cast<size_t>(p) * longest;
    region.packed[p].assign(b, b + all[p].bytes);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  regions_.push_back(std::move(region));
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Put, get, atomics.

VSHMEM_HOT int UcxPath::put(int pe, uint64_t offset, const void* source, size_t bytes, bool nbi,
                            char* err, size_t errlen) {
  const char* what = "put to";
  ucp_ep_h ep = nullptr;
  if (int r = ep_of(pe, what, &ep, err, errlen)) return r;
  const auto* from = static_cast<const uint8_t*>(source);
  bool posted = false;
  bool messaged = false;
  for (size_t done = 0; done < bytes;) {
    size_t span = 0;
    ucp_rkey_h rkey = rkey_of(pe, ep, offset + done, bytes - done, &span);
    if (rkey == nullptr) {
      if (int r = target_put(pe, ep, offset + done, from + done, span, err, errlen)) return r;
    } else if (peers_[pe].put_messages && ((offset + done) & kStatic) == 0) {
      // A registered region (the rkey): the peer performs the message at once on receipt.
      span = std::min(span, kPutMessageMax);
      if (int r = post_put(pe, ep, offset + done, from + done, span, nbi, err, errlen)) return r;
      messaged = true;
    } else {
      void* req = locked([&] {
        return ucp_put_nbx(ep, from + done, span, remote_address(pe, offset + done), rkey,
                           nbi ? &kNoRequestParams : &kFastCompletion);
      });
      if (UCS_PTR_IS_ERR(req)) return peer_error(pe, what, UCS_PTR_STATUS(req), err, errlen);
      // The source must stay untouched until the put is locally complete (blocking forms), or
      // until quiet (nbi forms, as OpenSHMEM says).
      if (nbi) {
        keep_nbi(pe, req);
      } else if (int r = wait(req, pe, what, err, errlen)) {
        return r;
      }
      posted = true;
    }
    done += span;
  }
  // A blocking put returns once its source may be reused (as OpenSHMEM says), not when its bytes
  // have landed: that costs a round trip, paid at quiet instead. Until then our later gets and
  // atomics are ordered after it (a signal after data, reading back what we wrote).
  if (posted) posted_.fetch_add(1, std::memory_order_acq_rel);
  if (messaged) messaged_.fetch_add(1, std::memory_order_acq_rel);
  if (posted || messaged) {
    peers_[pe].wake_due.store(true, std::memory_order_relaxed);
    unordered_.store(true, std::memory_order_release);
    note_app_issue();
  }
  return 0;
}

VSHMEM_HOT int UcxPath::post_put(int pe, ucp_ep_h ep, uint64_t offset, const void* source,
                                 size_t bytes, bool nbi, char* err, size_t errlen) {
  // The header lives until UCX has sent it: freed here when the send completed at once, else by
  // the callback (also after a wait that gave up).
  auto* h = new RequestHeader{
      static_cast<uint32_t>(TargetOp::kPut), my_pe_, 0, offset, bytes, 0, 0, 0, 0};
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  if (!nbi) param.op_attr_mask |= UCP_OP_ATTR_FLAG_FAST_CMPL;
  param.flags = UCP_AM_SEND_FLAG_EAGER;
  param.cb.send = [](void*, ucs_status_t, void* user) { delete static_cast<RequestHeader*>(user); };
  param.user_data = h;
  void* req =
      locked([&] { return ucp_am_send_nbx(ep, kAmRequest, h, sizeof(*h), source, bytes, &param); });
  if (req == nullptr || UCS_PTR_IS_ERR(req)) delete h;
  if (UCS_PTR_IS_ERR(req)) return peer_error(pe, "put to", UCS_PTR_STATUS(req), err, errlen);
  Peer& peer = peers_[pe];
  peer.last_message_offset.store(offset, std::memory_order_relaxed);
  if (!peer.unconfirmed.load(std::memory_order_relaxed) && !peer.unconfirmed.exchange(true)) {
    unconfirmed_peers_.fetch_add(1, std::memory_order_acq_rel);
  }
  if (req == nullptr) return 0;
  // The source must stay untouched until the message is sent (blocking), or until quiet (nbi).
  if (nbi) {
    keep_nbi(pe, req);
    return 0;
  }
  return wait(req, pe, "put to", err, errlen);
}

int UcxPath::confirm_put_messages(char* err, size_t errlen) {
  SharedCompletion::Turn turn(confirming_);
  if (int r = turn.earlier_failure(err, errlen)) return r;
  // All gets are posted before the first wait: one round trip whatever the number of peers.
  std::vector<std::pair<int, void*>> gets;
  int failed = 0;
  for (Peer& peer : peers_) {
    if (!peer.unconfirmed.load(std::memory_order_acquire) || !peer.unconfirmed.exchange(false)) {
      continue;
    }
    unconfirmed_peers_.fetch_sub(1, std::memory_order_acq_rel);
    if (failed != 0) continue;
    const uint64_t offset = peer.last_message_offset.load(std::memory_order_relaxed);
    ucp_ep_h ep = nullptr;
    failed = ep_of(peer.pe, "completing the puts to", &ep, err, errlen);
    if (failed != 0) continue;
    size_t span = 0;
    const ucp_rkey_h rkey = rkey_of(peer.pe, ep, offset, 1, &span);
    if (rkey == nullptr) {  // not reached: the message went to a registered region
      failed = set_err(err, errlen, kSystem,
                       format("completing the puts to PE %d: offset %#llx is not registered",
                              peer.pe, static_cast<unsigned long long>(offset)));
      continue;
    }
    void* req = locked([&] {
      return ucp_get_nbx(ep, &peer.confirm_sink, 1, remote_address(peer.pe, offset), rkey,
                         &kNoRequestParams);
    });
    if (UCS_PTR_IS_ERR(req)) {
      failed = peer_error(peer.pe, "completing the puts to", UCS_PTR_STATUS(req), err, errlen);
    } else if (req != nullptr) {
      gets.emplace_back(peer.pe, req);
    }
  }
  for (auto [pe, req] : gets) {
    if (failed != 0) {
      free_request(req);
      continue;
    }
    failed = wait(req, pe, "completing the puts to", err, errlen);
  }
  return turn.result(failed, err);
}

VSHMEM_HOT int UcxPath::order_after_puts(char* err, size_t errlen) {
  if (!unordered_.load(std::memory_order_acquire) || !unordered_.exchange(false)) return 0;
  return fence(err, errlen);
}

VSHMEM_HOT int UcxPath::get(int pe, void* dest, uint64_t offset, size_t bytes, bool nbi, char* err,
                            size_t errlen) {
  // A blocking get below a message's size that one registered region holds (every 8-byte get in
  // a loop): one UCX get, without the general form's loop state (get_any(), which also takes what
  // falls through here: target ops, a get across regions).
  if (nbi || bytes >= kGetMessageMin) return get_any(pe, dest, offset, bytes, nbi, err, errlen);
  ucp_ep_h ep = nullptr;
  if (int r = ep_of(pe, "get from", &ep, err, errlen)) return r;
  if (int r = order_after_puts(err, errlen)) return r;
  size_t span = 0;
  const ucp_rkey_h rkey = rkey_of(pe, ep, offset, bytes, &span);
  if (rkey != nullptr && span == bytes) {
    void* req = locked([&] {
      return ucp_get_nbx(ep, dest, bytes, remote_address(pe, offset), rkey, &kNoRequestParams);
    });
    return wait(req, pe, "get from", err, errlen);
  }
  return get_any(pe, dest, offset, bytes, nbi, err, errlen);
}

int UcxPath::get_any(int pe, void* dest, uint64_t offset, size_t bytes, bool nbi, char* err,
                     size_t errlen) {
  const char* what = "get from";
  ucp_ep_h ep = nullptr;
  if (int r = ep_of(pe, what, &ep, err, errlen)) return r;
  if (int r = order_after_puts(err, errlen)) return r;
  auto* to = static_cast<uint8_t*>(dest);
  for (size_t done = 0; done < bytes;) {
    size_t span = 0;
    ucp_rkey_h rkey = rkey_of(pe, ep, offset + done, bytes - done, &span);
    if (rkey == nullptr) {
      if (int r = target_get(pe, ep, to + done, offset + done, span, err, errlen)) return r;
    } else if (span >= kGetMessageMin && peers_[pe].get_messages &&
               ((offset + done) & kStatic) == 0) {
      if (int r = get_by_messages(pe, ep, to + done, offset + done, span, nbi, err, errlen)) {
        return r;
      }
    } else {
      void* req = locked([&] {
        return ucp_get_nbx(ep, to + done, span, remote_address(pe, offset + done), rkey,
                           &kNoRequestParams);
      });
      if (nbi) {
        if (UCS_PTR_IS_ERR(req)) return peer_error(pe, what, UCS_PTR_STATUS(req), err, errlen);
        keep_nbi(pe, req);
        posted_.fetch_add(1, std::memory_order_acq_rel);
      } else if (int r = wait(req, pe, what, err, errlen)) {
        return r;
      }
    }
    done += span;
  }
  return 0;
}

int UcxPath::send_get_message(int pe, ucp_ep_h ep, GetMessage& m, uint8_t* dest, uint64_t offset,
                              size_t bytes, char* err, size_t errlen) {
  m.pe = pe;
  m.path = this;
  m.op.done.store(false, std::memory_order_relaxed);
  m.op.status = 0;
  m.op.text.clear();
  m.op.data = dest;
  m.op.bytes = bytes;
  m.op.eager_only = true;
  m.op.send_status = UCS_OK;
  m.token = register_op(&m.op);
  const RequestHeader h{static_cast<uint32_t>(TargetOp::kGet),
                        my_pe_,
                        m.token,
                        offset,
                        bytes,
                        0,
                        0,
                        0,
                        0,
                        0,
                        kReplyEager};
  const ucs_status_t st = send_header(ep, kAmRequest, h, this, m.token);
  if (st == UCS_OK) return 0;
  forget_op(m.token);
  m.token = 0;
  return peer_error(pe, "get from", st, err, errlen);
}

GetMessage::~GetMessage() {
  if (token != 0) path->forget_op(token);
}

int UcxPath::finish_get_message(GetMessage& m, char* err, size_t errlen) {
  m.token = 0;  // on_reply (or fail_op) took the op off the table
  if (m.op.status == 0) return 0;
  if (m.op.send_status != UCS_OK) {
    return peer_error(m.pe, "get from", m.op.send_status, err, errlen);
  }
  return set_err(err, errlen, m.op.status,
                 format("get from PE %d: PE %d refused it: %s", m.pe, m.pe, m.op.text.c_str()));
}

int UcxPath::idle_turn(int pe, const char* what, unsigned* turns, Clock::time_point until,
                       char* err, size_t errlen) {
  if (progress_once() != 0 || run_work() != 0) return 0;
  if (++*turns % 256 != 0) return 0;
  const int failed = peers_[pe].failure.load(std::memory_order_acquire);
  if (failed != UCS_OK) return peer_error(pe, what, static_cast<ucs_status_t>(failed), err, errlen);
  const Clock::time_point now = Clock::now();
  still_polling(now);
  if (now > until) {
    return set_err(err, errlen, kTimeout,
                   format("%s PE %d: no answer for %s (PE %d may be hung or overloaded; "
                          "VSHMEM_BOOTSTRAP_TIMEOUT sets the limit)",
                          what, pe, seconds().c_str(), pe));
  }
  sched_yield();
  return 0;
}

int UcxPath::get_by_messages(int pe, ucp_ep_h ep, uint8_t* dest, uint64_t offset, size_t bytes,
                             bool nbi, char* err, size_t errlen) {
  const size_t piece = get_message_bytes(bytes);
  if (nbi) {
    // All sent now, completed at quiet (nbi_gets_count_ tells it there are some).
    for (size_t asked = 0; asked < bytes;) {
      const size_t n = std::min(bytes - asked, piece);
      auto m = std::make_unique<GetMessage>();
      if (int r = send_get_message(pe, ep, *m, dest + asked, offset + asked, n, err, errlen)) {
        return r;
      }
      const std::lock_guard<std::mutex> lock(nbi_mutex_);
      nbi_gets_.push_back(std::move(m));
      nbi_gets_count_.store(nbi_gets_.size(), std::memory_order_release);
      asked += n;
    }
    return 0;
  }
  // Whatever ends the get early forgets the requests still out (~GetMessage).
  std::array<GetMessage, kGetMessageDepth> slots;
  AppWait app(*this);
  auto until = deadline();
  size_t asked = 0, arrived = 0;
  for (unsigned turns = 0; arrived < bytes;) {
    bool moved = false;
    for (GetMessage& m : slots) {
      if (m.token != 0 && m.op.done.load(std::memory_order_acquire)) {
        if (int r = finish_get_message(m, err, errlen)) return r;
        arrived += m.op.bytes;
        moved = true;
      }
      if (m.token != 0 || asked == bytes) continue;
      const size_t n = std::min(bytes - asked, piece);
      if (int r = send_get_message(pe, ep, m, dest + asked, offset + asked, n, err, errlen)) {
        return r;
      }
      asked += n;
      moved = true;
    }
    if (moved) {
      until = deadline();
    } else if (int r = idle_turn(pe, "get from", &turns, until, err, errlen)) {
      return r;
    }
  }
  return 0;
}

int UcxPath::complete_nbi_gets(char* err, size_t errlen) {
  SharedCompletion::Turn turn(completing_gets_);
  if (int r = turn.earlier_failure(err, errlen)) return r;
  std::vector<std::unique_ptr<GetMessage>> gets;
  {
    const std::lock_guard<std::mutex> lock(nbi_mutex_);
    gets.swap(nbi_gets_);
    nbi_gets_count_.store(0, std::memory_order_seq_cst);
  }
  // A failure or the time limit forgets those still out (~GetMessage).
  AppWait app(*this);
  auto until = deadline();
  int failed = 0;
  unsigned turns = 0;
  for (auto& m : gets) {
    while (!m->op.done.load(std::memory_order_acquire)) {
      if (int r = idle_turn(m->pe, "get from", &turns, until, err, errlen)) {
        return turn.result(r, err);
      }
    }
    // The first failure is the error; the others are still waited for (their bytes land), and
    // not described (peer_error() may take 100 ms to describe one).
    if (failed == 0) {
      failed = finish_get_message(*m, err, errlen);
    } else {
      m->token = 0;  // on_reply (or fail_op) took the op off the table
    }
    until = deadline();
  }
  return turn.result(failed, err);
}

VSHMEM_HOT int UcxPath::atomic(int pe, int op, uint64_t offset, unsigned width, uint64_t operand,
                               uint64_t compare, uint64_t* result, char* err, size_t errlen) {
  const char* what = "atomic on";
  ucp_ep_h ep = nullptr;
  if (int r = ep_of(pe, what, &ep, err, errlen)) return r;
  if (int r = order_after_puts(err, errlen)) return r;
  size_t span = 0;
  // Global and static variables: always at the target, atomic with its own CPU atomics.
  ucp_rkey_h rkey = peers_[pe].ucx_atomics && !peers_[pe].device_heap && (offset & kStatic) == 0
                        ? rkey_of(pe, ep, offset, width, &span)
                        : nullptr;
  if (rkey == nullptr) {
    return target_atomic(pe, ep, op, offset, width, operand, compare, result, err, errlen);
  }
  ucp_atomic_op_t uop = UCP_ATOMIC_OP_ADD;
  uint64_t arg = operand, reply = 0;
  switch (op) {
    case VSHMEM_TRANSPORT_AMO_FETCH: arg = 0; break;
    case VSHMEM_TRANSPORT_AMO_SET:
    case VSHMEM_TRANSPORT_AMO_SWAP: uop = UCP_ATOMIC_OP_SWAP; break;
    case VSHMEM_TRANSPORT_AMO_CSWAP:
      // ucp: buffer holds the compare value, the reply buffer the value to swap in.
      uop = UCP_ATOMIC_OP_CSWAP;
      arg = compare;
      reply = operand;
      break;
    case VSHMEM_TRANSPORT_AMO_FETCH_ADD: break;
    case VSHMEM_TRANSPORT_AMO_FETCH_AND: uop = UCP_ATOMIC_OP_AND; break;
    case VSHMEM_TRANSPORT_AMO_FETCH_OR: uop = UCP_ATOMIC_OP_OR; break;
    case VSHMEM_TRANSPORT_AMO_FETCH_XOR: uop = UCP_ATOMIC_OP_XOR; break;
    default: return set_err(err, errlen, kInvalidArgument, format("unknown atomic op %d", op));
  }
  // 4-byte operands and replies sit in the low bytes (little-endian), as ucp reads them.
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  param.datatype = ucp_dt_make_contig(width);
  param.reply_buffer = &reply;
  if (width == 4) {
    arg &= 0xffffffffu;
    reply &= 0xffffffffu;
  }
  void* req = locked([&] {
    return ucp_atomic_op_nbx(ep, uop, &arg, 1, remote_address(pe, offset), rkey, &param);
  });
  if (int r = wait(req, pe, what, err, errlen)) return r;
  if (result != nullptr) *result = width == 4 ? (reply & 0xffffffffu) : reply;
  return 0;
}

int UcxPath::signal_add(int pe, uint64_t offset, uint64_t value, char* err, size_t errlen) {
  const char* what = "signal to";
  ucp_ep_h ep = nullptr;
  if (int r = ep_of(pe, what, &ep, err, errlen)) return r;
  // Blocking puts not yet known complete land before the signal, whichever PE they went to: a
  // barrier after puts (shmem_sync_all without quiet) makes them visible everywhere, as the
  // fetching barrier did before.
  if (unordered_.load(std::memory_order_acquire) && unordered_.exchange(false)) {
    if (int r = quiet(err, errlen)) return r;
  }
  // An active message that the peer performs on receipt (on_signal), not a network atomic: a
  // posted atomic over TCP (which UCX emulates with messages) is answered by the peer, so a
  // barrier round cost two messages instead of one.
  const ucs_status_t st = send_header(ep, kAmSignal, SignalHeader{offset, value, my_pe_, 0});
  if (st != UCS_OK) return peer_error(pe, what, st, err, errlen);
  note_app_issue();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Staging buffers.

int UcxPath::take_staging(void** out, char* err, size_t errlen) {
  {
    std::lock_guard<std::mutex> lock(staging_mutex_);
    if (!staging_free_.empty()) {
      *out = staging_free_.back();
      staging_free_.pop_back();
      return 0;
    }
  }
  void* p = nullptr;
  char e[512] = {};
  if (int r = host_.alloc_staging(host_.ctx, stage_chunk_, &p, e, sizeof(e))) {
    return set_err(err, errlen, r, format("staging buffer of %zu bytes: %s", stage_chunk_, e));
  }
  std::lock_guard<std::mutex> lock(staging_mutex_);
  staging_all_.push_back(p);
  *out = p;
  return 0;
}

void UcxPath::give_staging(void* p) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  staging_free_.push_back(p);
}

// ---------------------------------------------------------------------------------------------
// Target ops: our side.

uint64_t UcxPath::register_op(PendingOp* op) {
  std::lock_guard<std::mutex> lock(ops_mutex_);
  uint64_t token = next_token_++;
  ops_[token] = op;
  return token;
}

void UcxPath::forget_op(uint64_t token) {
  std::lock_guard<std::mutex> lock(ops_mutex_);
  ops_.erase(token);
}

void UcxPath::fail_op(uint64_t token, ucs_status_t status) {
  std::lock_guard<std::mutex> lock(ops_mutex_);
  auto it = ops_.find(token);
  if (it == ops_.end()) return;  // answered already, or the caller gave up on it
  PendingOp* op = it->second;
  ops_.erase(it);
  op->send_status = status;
  op->status = kPeerFailure;
  op->done.store(true, std::memory_order_release);
}

// h must stay valid until the send completes (*request done): UCX 1.13 reads the header of a
// multi-fragment message as it sends the fragments.
int UcxPath::send_request(int pe, ucp_ep_h ep, const RequestHeader& h, const void* data,
                          size_t bytes, void** request, const char* what, char* err,
                          size_t errlen) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = bytes <= kEagerMax ? UCP_AM_SEND_FLAG_EAGER : 0;
  void* r =
      locked([&] { return ucp_am_send_nbx(ep, kAmRequest, &h, sizeof(h), data, bytes, &param); });
  if (UCS_PTR_IS_ERR(r)) return peer_error(pe, what, UCS_PTR_STATUS(r), err, errlen);
  *request = r;
  return 0;
}

int UcxPath::wait_op(PendingOp& op, uint64_t token, int pe, const char* what, char* err,
                     size_t errlen) {
  AppWait app(*this);
  const auto until = deadline();
  for (unsigned turns = 0; !op.done.load(std::memory_order_acquire);) {
    if (int r = idle_turn(pe, what, &turns, until, err, errlen)) {
      forget_op(token);
      return r;
    }
  }
  if (op.status != 0) {
    return set_err(err, errlen, op.status,
                   format("%s PE %d: PE %d refused it: %s", what, pe, pe, op.text.c_str()));
  }
  return 0;
}

// The network and provider steps of one staged transfer of ours (run_staged in
// chunk_pipeline.hpp drives them): a put copies each chunk into its bounce buffer (the source may
// be GPU memory, which the network cannot read) and sends it to the target's progress thread,
// which copies it into its heap and answers; a get asks for each chunk, the reply lands in the
// bounce buffer (by rendezvous: straight from the network), and is copied out. Copies are
// started and polled (host_.copy_start), so they overlap the network legs of other chunks.
class UcxPath::StagedOps {
 public:
  StagedOps(UcxPath& path, bool put, int pe, ucp_ep_h ep, uint64_t offset, void* local, bool direct,
            char* err, size_t errlen)
      : path_(path),
        put_(put),
        pe_(pe),
        ep_(ep),
        offset_(offset),
        local_(static_cast<uint8_t*>(local)),
        err_(err),
        errlen_(errlen),
        what_(put ? "put to" : "get from"),
        bounce_(path, direct),
        slots_(static_cast<size_t>(path.stage_depth_)),
        last_move_(Clock::now()) {}

  int start_copy(const ChunkPipeline::Chunk& c, uint64_t* ticket) {
    void* buf = nullptr;
    if (int r = bounce_.get(c.slot, &buf, err_, errlen_)) return r;
    char e[512] = {};
    void* dst = put_ ? buf : local_ + c.offset;
    const void* src = put_ ? static_cast<const void*>(local_ + c.offset) : buf;
    if (int r = path_.host_.copy_start(path_.host_.ctx, dst, src, c.bytes, ticket, e, sizeof(e))) {
      return set_err(err_, errlen_, r, format("%s PE %d: staging: %s", what_, pe_, e));
    }
    Slot& slot = slots_[static_cast<size_t>(c.slot)];
    slot.copy_ticket = *ticket;
    slot.copy_t0 = Clock::now();
    return 0;
  }
  int test_copy(uint64_t ticket, bool* done) {
    char e[512] = {};
    int d = 0;
    if (int r = path_.host_.copy_test(path_.host_.ctx, ticket, &d, e, sizeof(e))) {
      return set_err(err_, errlen_, r, format("%s PE %d: staging: %s", what_, pe_, e));
    }
    *done = d != 0;
    if (*done) {
      last_move_ = Clock::now();
      for (Slot& slot : slots_) {
        if (slot.copy_ticket != ticket) continue;
        copy_time_ += last_move_ - slot.copy_t0;
        break;
      }
    }
    return 0;
  }
  int start_net(const ChunkPipeline::Chunk& c) {
    Slot& slot = slots_[static_cast<size_t>(c.slot)];
    void* buf = nullptr;
    if (int r = bounce_.get(c.slot, &buf, err_, errlen_)) return r;
    // A slot of our staging segment: the target's copy reads or writes it where it is (direct
    // staging), and the messages carry no data.
    const size_t at = bounce_.segment_offset(c.slot);
    const bool direct = at != StagingSet::kNone;
    slot.op.done.store(false);
    slot.op.status = 0;
    slot.op.text.clear();
    slot.op.data = put_ || direct ? nullptr : buf;  // a get's reply lands here
    slot.op.bytes = put_ || direct ? 0 : c.bytes;
    slot.send = nullptr;
    slot.net_t0 = Clock::now();
    slot.token = path_.register_op(&slot.op);
    slot.header = RequestHeader{static_cast<uint32_t>(put_ ? TargetOp::kPut : TargetOp::kGet),
                                path_.my_pe_,
                                slot.token,
                                offset_ + c.offset,
                                c.bytes,
                                0,
                                0,
                                0,
                                0,
                                direct ? at + 1 : 0};
    (direct ? path_.chunks_direct_ : path_.chunks_carried_).fetch_add(1, std::memory_order_relaxed);
    const bool carried = put_ && !direct;
    return path_.send_request(pe_, ep_, slot.header, carried ? buf : nullptr, carried ? c.bytes : 0,
                              &slot.send, what_, err_, errlen_);
  }
  // Done when the target has answered and our send is complete (UCX no longer reads the bounce
  // buffer or the header).
  int test_net(const ChunkPipeline::Chunk& c, bool* done) {
    Slot& slot = slots_[static_cast<size_t>(c.slot)];
    *done = false;
    if (!slot.op.done.load(std::memory_order_acquire)) return 0;
    if (slot.send != nullptr) {
      const ucs_status_t st = ucp_request_check_status(slot.send);
      if (st == UCS_INPROGRESS) return 0;
      path_.free_request(slot.send);
      slot.send = nullptr;
      if (st != UCS_OK) return path_.peer_error(pe_, what_, st, err_, errlen_);
    }
    path_.forget_op(slot.token);
    slot.token = 0;
    if (slot.op.status != 0) {
      return set_err(
          err_, errlen_, slot.op.status,
          format("%s PE %d: PE %d refused it: %s", what_, pe_, pe_, slot.op.text.c_str()));
    }
    *done = true;
    last_move_ = Clock::now();
    net_time_ += last_move_ - slot.net_t0;
    ++chunks_;
    return 0;
  }
  // Nothing moved: progress the network (and serve peers' requests: the progress thread is
  // handed off meanwhile); a failed peer or the time limit ends the transfer.
  int idle() {
    if (path_.progress_once() != 0 || path_.run_work() != 0) return 0;
    if (++spins_ % 256 != 0) return 0;
    const int failed = path_.peers_[pe_].failure.load(std::memory_order_acquire);
    if (failed != UCS_OK) {
      return path_.peer_error(pe_, what_, static_cast<ucs_status_t>(failed), err_, errlen_);
    }
    ++yields_;
    if (Clock::now() - last_move_ > path_.timeout_) {
      return set_err(err_, errlen_, kTimeout,
                     format("%s PE %d: no answer for %s (PE %d may be hung or overloaded; "
                            "VSHMEM_BOOTSTRAP_TIMEOUT sets the limit)",
                            what_, pe_, path_.seconds().c_str(), pe_));
    }
    sched_yield();
    return 0;
  }
  void abandon(const ChunkPipeline::Chunk& c, bool net_started) {
    abandoned_ = true;
    Slot& slot = slots_[static_cast<size_t>(c.slot)];
    if (!net_started) return;
    if (slot.token != 0) path_.forget_op(slot.token);  // a late reply finds no one
    slot.token = 0;
    // Still UCX's: it completes the send (or fails it) on its own.
    if (slot.send != nullptr && !UCS_PTR_IS_ERR(slot.send)) path_.free_request(slot.send);
    slot.send = nullptr;
  }
  // After a failure: sends and replies given up on, and copies that may still be running, may
  // still use the bounce buffers: they are never handed out again.
  ~StagedOps() {
    if (abandoned_) bounce_.abandon();
  }
  // Where the time of a finished transfer went (VSHMEM_DEBUG=info): per chunk, the provider's
  // copy and the network leg (request sent -> the target's answer), averaged.
  std::string summary() const {
    const double n = chunks_ == 0 ? 1.0 : static_cast<double>(chunks_);
    const auto us = [n](Clock::duration d) {
      return std::chrono::duration<double, std::micro>(d).count() / n;
    };
    return format(
        "%zu chunks; per chunk: copy %.1f us, network (request -> answer) %.1f us; "
        "%u idle rounds",
        chunks_, us(copy_time_), us(net_time_), yields_);
  }

 private:
  struct Slot {
    PendingOp op;
    uint64_t token = 0;
    RequestHeader header{};  // UCX reads it until the send completes
    void* send = nullptr;
    uint64_t copy_ticket = 0;
    Clock::time_point copy_t0{}, net_t0{};
  };
  UcxPath& path_;
  const bool put_;
  const int pe_;
  const ucp_ep_h ep_;
  const uint64_t offset_;
  uint8_t* const local_;
  char* const err_;
  const size_t errlen_;
  const char* const what_;
  StagingSet bounce_;
  std::vector<Slot> slots_;
  Clock::time_point last_move_;
  unsigned spins_ = 0;
  bool abandoned_ = false;
  Clock::duration copy_time_{0}, net_time_{0};
  size_t chunks_ = 0;
  unsigned yields_ = 0;  // idle rounds that reached the time check (every 256th)
};

int UcxPath::target_transfer(bool put, int pe, ucp_ep_h ep, uint64_t offset, void* local,
                             size_t bytes, char* err, size_t errlen) {
  AppWait app(*this);
  // Direct staging for chunks larger than an eager message (smaller ones cost one message
  // either way, and a small transfer needs no set-up on its path).
  bool direct = false;
  if (bytes > kEagerMax) {
    if (int r = direct_to(pe, ep, &direct, err, errlen)) return r;
  }
  StagedOps ops(*this, put, pe, ep, offset, local, direct, err, errlen);
  const Clock::time_point t0 = Clock::now();
  const int rc = vshmem::run_staged(bytes, stage_chunk_, stage_depth_, put, ops);
  if (rc == 0 && bytes >= static_cast<size_t>(stage_depth_) * stage_chunk_ && log_enabled(2)) {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    log(2, format("ucx: staged %s PE %d: %zu bytes in %.3f ms (%.2f GB/s; chunks of %zu KiB, %d "
                  "in flight, %s): %s",
                  put ? "put to" : "get from", pe, bytes, s * 1e3,
                  static_cast<double>(bytes) / s / 1e9, stage_chunk_ >> 10, stage_depth_,
                  direct ? "direct" : "carried in messages", ops.summary().c_str()));
  }
  return rc;
}

int UcxPath::target_put(int pe, ucp_ep_h ep, uint64_t offset, const void* source, size_t bytes,
                        char* err, size_t errlen) {
  // The source is only read (target_transfer's copies go from it into the bounce buffers).
  return target_transfer(true, pe, ep, offset, const_cast<void*>(source), bytes, err, errlen);
}

int UcxPath::target_get(int pe, ucp_ep_h ep, void* dest, uint64_t offset, size_t bytes, char* err,
                        size_t errlen) {
  return target_transfer(false, pe, ep, offset, dest, bytes, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// Direct staging (see the top of the file).

bool UcxPath::own_segment(std::string* why) {
  std::lock_guard<std::mutex> lock(segment_mutex_);
  Segment& g = segment_;
  if (g.tried) {
    *why = g.failure;
    return g.memh != nullptr;
  }
  g.tried = true;
  // Two transfers' worth of slots (a third transfer at once, the proxy thread's and the
  // application's, takes ordinary staging buffers for its chunks), kSegmentMax at most: the
  // largest chunks and depths (64 MiB x 64) would otherwise ask for 8 GiB of shared memory.
  const size_t slots = std::max<size_t>(
      1, std::min(2 * static_cast<size_t>(stage_depth_), kSegmentMax / stage_chunk_));
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                  UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  mp.address = nullptr;
  mp.length = slots * stage_chunk_;
  mp.flags = UCP_MEM_MAP_ALLOCATE;
  ucs_status_t s = ucp_mem_map(context_, &mp, &g.memh);
  if (s != UCS_OK) {
    g.memh = nullptr;
    g.failure = format("ucp_mem_map(%zu bytes, ALLOCATE): %s", mp.length, ucs_status_string(s));
    *why = g.failure;
    return false;
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  s = ucp_mem_query(g.memh, &attr);
  void* packed = nullptr;
  size_t packed_bytes = 0;
  if (s == UCS_OK) s = ucp_rkey_pack(context_, g.memh, &packed, &packed_bytes);
  char e[512] = {};
  int rc = 0;
  if (s == UCS_OK) {
    g.base = static_cast<uint8_t*>(attr.address);
    g.bytes = attr.length;
    g.packed.assign(static_cast<uint8_t*>(packed), static_cast<uint8_t*>(packed) + packed_bytes);
    ucp_rkey_buffer_release(packed);
    rc = host_.register_host(host_.ctx, g.base, g.bytes, e, sizeof(e));
  }
  if (s != UCS_OK || rc != 0) {
    g.failure = s != UCS_OK ? format("ucp_mem_query/ucp_rkey_pack: %s", ucs_status_string(s))
                            : format("registering it with the memory provider: %s", e);
    ucp_mem_unmap(context_, g.memh);
    g.memh = nullptr;
    g.base = nullptr;
    *why = g.failure;
    return false;
  }
  g.registered = true;
  for (size_t i = slots; i-- > 0;) g.free.push_back(i * stage_chunk_);
  return true;
}

int UcxPath::direct_to(int pe, ucp_ep_h ep, bool* direct, char* err, size_t errlen) {
  Peer& peer = peers_[pe];
  int mode = peer.direct.load(std::memory_order_acquire);
  if (mode == kDirectUnknown) {
    std::lock_guard<std::mutex> lock(peer.direct_mutex);
    mode = peer.direct.load(std::memory_order_acquire);
    if (mode == kDirectUnknown) {
      std::string why;
      if (!stage_direct_) {
        why = "VSHMEM_UCX_STAGE_DIRECT=0";
      } else if (own_segment(&why)) {
        // The peer maps our segment (kAttach), or says why it cannot.
        PendingOp pending;
        const uint64_t token = register_op(&pending);
        RequestHeader h{static_cast<uint32_t>(TargetOp::kAttach),
                        my_pe_,
                        token,
                        0,
                        segment_.packed.size(),
                        reinterpret_cast<uintptr_t>(segment_.base),
                        segment_.bytes,
                        0,
                        0,
                        0};
        const char* what = "mapping staging buffers on";
        void* send = nullptr;
        if (int r = send_request(pe, ep, h, segment_.packed.data(), segment_.packed.size(), &send,
                                 what, err, errlen)) {
          forget_op(token);
          return r;
        }
        int r = wait_op(pending, token, pe, what, err, errlen);
        forget_op(token);
        const int w = wait(send, pe, what, err, errlen);
        if (r == 0) r = w;
        if (r != 0 && pending.status == 0) return r;  // no answer: the peer failed
        if (pending.status != 0)
          why = format("PE %d cannot map them: %s", pe, pending.text.c_str());
      }
      mode = why.empty() ? kDirectYes : kDirectNo;
      peer.direct.store(mode, std::memory_order_release);
      if (mode == kDirectYes) {
        log(2, format("ucx: staged transfers to PE %d: direct (PE %d's copies read and write our "
                      "page-locked staging buffers, %zu bytes, through UCX's shared memory; the "
                      "messages carry no data)",
                      pe, pe, segment_.bytes));
      } else {
        log(2, format("ucx: staged transfers to PE %d: data carried in UCX messages (%s)", pe,
                      why.c_str()));
      }
    }
  }
  *direct = mode == kDirectYes;
  return 0;
}

std::string UcxPath::attach_peer(const Work& w) {
  const RequestHeader& h = w.header;
  const int pe = h.from_pe;
  if (pe < 0 || pe >= n_pes_ || pe == my_pe_ || w.data == nullptr || h.bytes == 0 ||
      h.compare == 0) {
    return "malformed request";
  }
  Peer& peer = peers_[pe];
  std::lock_guard<std::mutex> lock(peer.mapped_mutex);
  if (peer.mapped_base.load() != nullptr) return "";  // asked again (another thread of it)
  ucp_ep_h ep = nullptr;
  char err[512] = {};
  if (ep_of(pe, "mapping the staging buffers of", &ep, err, sizeof(err)) != 0) return err;
  ucp_rkey_h rkey = nullptr;
  ucs_status_t s = locked([&] { return ucp_ep_rkey_unpack(ep, w.data, &rkey); });
  if (s != UCS_OK) return format("ucp_ep_rkey_unpack: %s", ucs_status_string(s));
  void* p = nullptr;
  s = locked([&] { return ucp_rkey_ptr(rkey, h.operand, &p); });
  if (s != UCS_OK) {
    locked([&] { ucp_rkey_destroy(rkey); });
    // UCS_ERR_UNREACHABLE: no shared-memory mapping of that memory (another host, or transports
    // without one).
    return format("ucp_rkey_ptr: %s (UCX has no shared-memory mapping of PE %d's memory here)",
                  ucs_status_string(s), pe);
  }
  if (int rc = host_.register_host(host_.ctx, p, h.compare, err, sizeof(err))) {
    (void)rc;
    locked([&] { ucp_rkey_destroy(rkey); });
    return format("registering the mapping with the memory provider: %s", err);
  }
  peer.mapped_rkey = rkey;
  peer.mapped_bytes.store(h.compare, std::memory_order_relaxed);
  peer.mapped_base.store(static_cast<uint8_t*>(p), std::memory_order_release);
  log(2, format("ucx: PE %d's staging buffers (%llu bytes) mapped here: its staged chunks are "
                "copied straight from and into them",
                pe, static_cast<unsigned long long>(h.compare)));
  return "";
}

uint8_t* UcxPath::peer_segment(int pe, uint64_t offset, uint64_t bytes, std::string* why) {
  if (pe < 0 || pe >= n_pes_) {
    *why = "malformed request";
    return nullptr;
  }
  const Peer& peer = peers_[pe];
  uint8_t* base = peer.mapped_base.load(std::memory_order_acquire);
  const uint64_t have = peer.mapped_bytes.load(std::memory_order_relaxed);
  if (base == nullptr) {
    *why = format("PE %d's staging buffers are not mapped on PE %d", pe, my_pe_);
    return nullptr;
  }
  if (bytes > have || offset > have - bytes) {
    *why = format("[%llu, +%llu bytes) is beyond PE %d's %llu bytes of staging buffers",
                  static_cast<unsigned long long>(offset), static_cast<unsigned long long>(bytes),
                  pe, static_cast<unsigned long long>(have));
    return nullptr;
  }
  return base + offset;
}

int UcxPath::target_atomic(int pe, ucp_ep_h ep, int op, uint64_t offset, unsigned width,
                           uint64_t operand, uint64_t compare, uint64_t* result, char* err,
                           size_t errlen) {
  const char* what = "atomic on";
  PendingOp pending;
  const uint64_t token = register_op(&pending);
  RequestHeader h{static_cast<uint32_t>(TargetOp::kAtomic),
                  my_pe_,
                  token,
                  offset,
                  width,
                  operand,
                  compare,
                  static_cast<uint32_t>(op),
                  width,
                  0};
  void* send = nullptr;
  if (int r = send_request(pe, ep, h, nullptr, 0, &send, what, err, errlen)) {
    forget_op(token);
    return r;
  }
  int r = wait_op(pending, token, pe, what, err, errlen);
  forget_op(token);
  int w = wait(send, pe, what, err, errlen);
  if (r != 0) return r;
  if (w != 0) return w;
  if (result != nullptr) *result = pending.value;
  return 0;
}

ucs_status_t UcxPath::on_reply(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxPath*>(arg);
  if (header_length != sizeof(ReplyHeader)) return UCS_OK;
  ReplyHeader h;
  std::memcpy(&h, header, sizeof(h));
  std::lock_guard<std::mutex> lock(self->ops_mutex_);
  auto it = self->ops_.find(h.token);
  if (it == self->ops_.end()) return UCS_OK;  // the caller gave up on it (timed out)
  PendingOp* op = it->second;
  self->ops_.erase(it);
  op->status = h.status;
  op->value = h.value;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    // A get's data by rendezvous: straight into the op's bounce buffer; done when it is there.
    if (h.status != 0 || op->data == nullptr || length != op->bytes || op->eager_only) {
      op->status = h.status != 0 ? h.status : kPeerFailure;
      op->text = h.status != 0 ? "refused (its message did not arrive)" : "malformed reply";
      op->done.store(true, std::memory_order_release);
      return UCS_OK;
    }
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    // This handler and its callback run under the progressing thread's turn (worker_lock_).
    rp.cb.recv_am = [](void* request, ucs_status_t status, size_t, void* user) {
      auto* o = static_cast<PendingOp*>(user);
      if (status != UCS_OK) {
        o->status = kPeerFailure;
        o->text = ucs_status_string(status);
      }
      o->done.store(true, std::memory_order_release);
      ucp_request_free(request);
    };
    rp.user_data = op;
    void* r = ucp_am_recv_data_nbx(self->worker_, data, op->data, length, &rp);
    if (r == nullptr || UCS_PTR_IS_ERR(r)) {
      if (UCS_PTR_IS_ERR(r)) {
        op->status = kPeerFailure;
        op->text = ucs_status_string(UCS_PTR_STATUS(r));
      }
      op->done.store(true, std::memory_order_release);
    }
    return UCS_OK;
  }
  if (h.status != 0) {
    op->text.assign(static_cast<const char*>(data), length);
  } else if (op->data != nullptr) {
    if (length != op->bytes) {
      op->status = kPeerFailure;
      op->text = format("replied with %zu bytes, not %zu", length, op->bytes);
    } else {
      std::memcpy(op->data, data, length);
    }
  }
  op->done.store(true, std::memory_order_release);
  return UCS_OK;
}

// ---------------------------------------------------------------------------------------------
// Target ops: the target's side. The callback only queues the request: the progress thread
// performs it (GPU copies and atomics do not run inside UCX's progress), then replies.

ucs_status_t UcxPath::on_request(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxPath*>(arg);
  if (header_length != sizeof(RequestHeader)) return UCS_OK;
  RequestHeader rh;
  std::memcpy(&rh, header, sizeof(rh));
  // A put message (post_put) into our host heap: copied right here, not answered.
  if (rh.op == static_cast<uint32_t>(TargetOp::kPut) && rh.token == 0 && rh.direct == 0 &&
      rh.bytes == length && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0 &&
      (rh.offset & kStatic) == 0 && !self->heap_is_device_ &&
      self->in_heap_use(rh.offset, length)) {
    std::memcpy(reinterpret_cast<void*>(self->heap_base_ + rh.offset), data, length);
    return UCS_OK;
  }
  // A get message (get_by_messages) from our host heap: answered right here, from the heap.
  if (rh.op == static_cast<uint32_t>(TargetOp::kGet) && rh.token != 0 && rh.direct == 0 &&
      (rh.flags & kReplyEager) != 0 && length == 0 && (rh.offset & kStatic) == 0 &&
      !self->heap_is_device_ && self->in_heap_use(rh.offset, rh.bytes) && rh.from_pe >= 0 &&
      rh.from_pe < self->n_pes_ &&
      self->peers_[rh.from_pe].ep.load(std::memory_order_acquire) != nullptr) {
    auto reply = std::make_unique<Reply>();
    reply->header.token = rh.token;
    reply->heap = reinterpret_cast<const void*>(self->heap_base_ + rh.offset);
    reply->heap_bytes = rh.bytes;
    reply->eager = true;
    self->send_reply(rh.from_pe, std::move(reply));
    return UCS_OK;
  }
  auto w = std::make_unique<Work>();
  w->header = rh;
  w->arrived = Clock::now();
  // A put's data is in the message, or (direct staging) in the requester's staging segment.
  const uint64_t carried = w->header.direct != 0 ? 0 : w->header.bytes;
  if (w->header.op == static_cast<uint32_t>(TargetOp::kPut) && carried != length) {
    w->header.op = 0;  // malformed: answered with an error
  }
  // An atomic on host memory (a host heap, or the global and static variables) is applied right
  // here with the CPU's atomics and answered at once, as UCX's own emulated atomics are
  // (amo_sw.c): no hand-over to the progress thread on the path of every remote atomic. Only
  // when the endpoint back to the requester exists (making one waits for the peer, which must
  // not happen inside UCX's progress); a GPU heap's atomics go to the progress thread.
  const int from = w->header.from_pe;
  if (w->header.op == static_cast<uint32_t>(TargetOp::kAtomic) && w->header.token != 0 &&
      ((w->header.offset & kStatic) != 0 || !self->heap_is_device_) && from >= 0 &&
      from < self->n_pes_ && self->peers_[from].ep.load(std::memory_order_acquire) != nullptr) {
    self->perform(*w);
    return UCS_OK;
  }
  // The data goes into a staging buffer (page-locked for a GPU heap: the copy into the heap then
  // runs at full speed), or our own memory when it is larger than one.
  void* into = nullptr;
  if (length > 0) {
    void* buf = nullptr;
    if (length <= self->stage_chunk_ && self->take_staging(&buf, nullptr, 0) == 0) {
      w->staged = self->shared_staging(buf);
      into = buf;
    } else {
      w->owned.resize(length);
      into = w->owned.data();
    }
    w->data = into;
  }
  if (length > 0 && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    // UCX chose rendezvous (the transport would not carry it eagerly): fetch the data into our
    // buffer, and queue the request once it is there.
    ucp_request_param_t rp{};
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    // This handler and its callback run under the progressing thread's turn (worker_lock_).
    rp.cb.recv_am = [](void* request, ucs_status_t status, size_t, void* user) {
      std::unique_ptr<Work> work(static_cast<Work*>(user));
      work->data_in = Clock::now();
      UcxPath* path = work->owner;
      if (status == UCS_OK) path->queue(std::move(work));
      ucp_request_free(request);
    };
    w->owner = self;
    Work* raw = w.release();
    rp.user_data = raw;
    void* r = ucp_am_recv_data_nbx(self->worker_, data, into, length, &rp);
    if (r == nullptr) {
      self->queue(std::unique_ptr<Work>(raw));  // completed at once: no callback
    } else if (UCS_PTR_IS_ERR(r)) {
      delete raw;
    }
    return UCS_OK;
  }
  if (length > 0) std::memcpy(into, data, length);
  self->queue(std::move(w));
  return UCS_OK;
}

ucs_status_t UcxPath::on_signal(void* arg, const void* header, size_t header_length, void*, size_t,
                                const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxPath*>(arg);
  if (header_length != sizeof(SignalHeader)) return UCS_OK;
  SignalHeader h;
  std::memcpy(&h, header, sizeof(h));
  if (!self->heap_is_device_ && h.offset % 8 == 0 && self->in_heap_use(h.offset, 8)) {
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(self->heap_base_ + h.offset), h.value,
                       __ATOMIC_SEQ_CST);
    return UCS_OK;
  }
  auto w = std::make_unique<Work>();
  w->header = RequestHeader{static_cast<uint32_t>(TargetOp::kAtomic),
                            h.from_pe,
                            0,  // no token: not answered
                            h.offset,
                            8,
                            h.value,
                            0,
                            static_cast<uint32_t>(VSHMEM_TRANSPORT_AMO_FETCH_ADD),
                            8,
                            0};
  w->arrived = Clock::now();
  self->queue(std::move(w));
  return UCS_OK;
}

void UcxPath::queue(std::unique_ptr<Work> w) {
  {
    std::lock_guard<std::mutex> lock(work_mutex_);
    work_.push_back(std::move(*w));
    work_count_.fetch_add(1, std::memory_order_release);
  }
  if (!t_work_follows && std::this_thread::get_id() != progress_thread_.get_id()) wake();
}

unsigned UcxPath::finish_copies() {
  if (copies_count_.load(std::memory_order_acquire) == 0) return 0;
  std::vector<RunningCopy> done;
  {
    std::lock_guard<std::mutex> lock(copies_mutex_);
    for (auto it = copies_.begin(); it != copies_.end();) {
      char err[512] = {};
      int finished = 0;
      if (int rc = host_.copy_test(host_.ctx, it->ticket, &finished, err, sizeof(err))) {
        it->reply->header.status = rc;
        it->reply->staged.reset();
        it->reply->data.assign(err, err + std::strlen(err));
        finished = 1;
      }
      if (finished == 0) {
        ++it;
        continue;
      }
      done.push_back(std::move(*it));
      it = copies_.erase(it);
      copies_count_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  for (RunningCopy& c : done) {
    if (c.work.header.token == 0) continue;
    note_served(c.work, c.performed);
    send_reply(c.work.header.from_pe, std::move(c.reply));
  }
  return static_cast<unsigned>(done.size());
}

VSHMEM_HOT unsigned UcxPath::run_work() {
  const unsigned copied = finish_copies();
  for (unsigned done = copied;; ++done) {
    if (work_count_.load(std::memory_order_acquire) == 0) return done;  // no lock when idle
    Work w;
    {
      std::lock_guard<std::mutex> lock(work_mutex_);
      if (work_.empty()) return done;
      w = std::move(work_.front());
      work_.pop_front();
      work_count_.fetch_sub(1, std::memory_order_relaxed);
    }
    perform(w);
  }
}

void UcxPath::perform(Work& w) {
  const Clock::time_point performed = Clock::now();
  const RequestHeader& h = w.header;
  auto reply = std::make_unique<Reply>();
  reply->header.token = h.token;
  reply->eager = (h.flags & kReplyEager) != 0;
  std::string bad;
  const auto op = static_cast<TargetOp>(h.op);
  const bool is_static = (h.offset & kStatic) != 0;
  const uint64_t static_offset = h.offset & ~kStatic;
  // Direct staging: the chunk is in the requester's staging segment, mapped here.
  uint8_t* direct = nullptr;
  if (h.direct != 0 && (op == TargetOp::kPut || op == TargetOp::kGet)) {
    direct = peer_segment(h.from_pe, h.direct - 1, h.bytes, &bad);
  }
  if (!bad.empty()) {
    // Said above.
  } else if (op == TargetOp::kAttach) {
    bad = h.token != 0 ? attach_peer(w) : "malformed request";
    if (!bad.empty()) reply->header.status = kUnsupported;
  } else if (op != TargetOp::kPut && op != TargetOp::kGet && op != TargetOp::kAtomic) {
    bad = "malformed request";
  } else if (is_static) {
    if (h.bytes > static_size_ || static_offset > static_size_ - h.bytes) {
      bad = format(
          "[%#llx, +%llu bytes) is beyond PE %d's %zu bytes of global and static "
          "variables",
          static_cast<unsigned long long>(static_offset), static_cast<unsigned long long>(h.bytes),
          my_pe_, static_size_);
    } else if (op == TargetOp::kAtomic &&
               ((h.width != 4 && h.width != 8) || static_offset % h.width != 0 ||
                h.amo > VSHMEM_TRANSPORT_AMO_FETCH_XOR)) {
      bad = "malformed atomic";
    }
  } else if (!in_heap_use(h.offset, h.bytes)) {
    bad =
        format("[%#llx, +%llu bytes) is beyond the %llu bytes of PE %d's heap in use",
               static_cast<unsigned long long>(h.offset), static_cast<unsigned long long>(h.bytes),
               static_cast<unsigned long long>(committed_.load()), my_pe_);
  }
  void* target =
      reinterpret_cast<void*>(is_static ? static_base_ + static_offset : heap_base_ + h.offset);
  char err[512] = {};
  int rc = 0;
  // A put's data (in the message, or in the requester's segment), where a get's data goes.
  const void* in = direct != nullptr ? direct : w.data;
  const auto out = [&]() -> void* {
    return direct != nullptr ? direct : reply_buffer(reply.get(), h.bytes);
  };
  if (op == TargetOp::kAttach) {
    // Answered below (bad says why it failed).
  } else if (bad.empty() && is_static) {
    // Our own host memory: the CPU reaches it directly (the provider is for the heap, which may
    // be GPU memory).
    if (op == TargetOp::kPut) {
      std::memcpy(target, in, h.bytes);
    } else if (op == TargetOp::kGet) {
      std::memcpy(out(), target, h.bytes);
    } else {
      reply->header.value =
          h.width == 4
              ? cpu_atomic<uint32_t>(static_cast<int>(h.amo), target, h.operand, h.compare)
              : cpu_atomic<uint64_t>(static_cast<int>(h.amo), target, h.operand, h.compare);
    }
  } else if (bad.empty()) {
    if (op == TargetOp::kPut || op == TargetOp::kGet) {
      // The copy is started and left running: the thread goes on receiving the next chunks
      // while it runs (finish_copies() answers once it is done; the staging buffer stays with
      // it until then).
      void* dst = target;
      const void* src = in;
      if (op == TargetOp::kGet) {
        dst = out();
        src = target;
      }
      uint64_t ticket = 0;
      int done = 0;
      rc = host_.copy_start(host_.ctx, dst, src, h.bytes, &ticket, err, sizeof(err));
      if (rc == 0) rc = host_.copy_test(host_.ctx, ticket, &done, err, sizeof(err));
      if (rc == 0 && done == 0) {
        std::lock_guard<std::mutex> lock(copies_mutex_);
        copies_.push_back(RunningCopy{ticket, std::move(w), std::move(reply), performed});
        copies_count_.fetch_add(1, std::memory_order_release);
        return;
      }
    } else {
      rc = host_.atomic(host_.ctx, static_cast<int>(h.amo), target, h.width, h.operand, h.compare,
                        &reply->header.value, err, sizeof(err));
    }
    if (rc != 0) bad = err;
  } else {
    rc = kInvalidArgument;
  }
  if (!bad.empty()) {
    if (reply->header.status == 0) reply->header.status = rc != 0 ? rc : kInvalidArgument;
    reply->staged.reset();
    reply->data.assign(bad.begin(), bad.end());
  }
  if (h.token == 0) {
    // A signal (signal_add) or a put message (post_put): nobody waits for an answer.
    if (!bad.empty()) {
      log(0, format("ucx: a %s from PE %d failed: %s", op == TargetOp::kPut ? "put" : "signal",
                    h.from_pe, bad.c_str()));
    }
    note_served(w, performed);
    return;
  }
  note_served(w, performed);
  send_reply(h.from_pe, std::move(reply));
}

void UcxPath::send_reply(int pe, std::unique_ptr<Reply> reply) {
  if (pe < 0 || pe >= n_pes_) return;
  ucp_ep_h ep = nullptr;
  char err[512] = {};
  if (ep_of(pe, "replying to", &ep, err, sizeof(err)) != 0) {
    log(1, format("ucx: %s", err));
    return;
  }
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.flags = reply->eager || reply->payload_bytes() <= kEagerMax ? UCP_AM_SEND_FLAG_EAGER : 0;
  param.cb.send = [](void* request, ucs_status_t, void* user) {
    delete static_cast<Reply*>(user);
    ucp_request_free(request);  // a callback: under the progressing thread's turn
  };
  param.user_data = reply.get();
  void* r = locked([&] {
    return ucp_am_send_nbx(ep, kAmReply, &reply->header, sizeof(reply->header), reply->payload(),
                           reply->payload_bytes(), &param);
  });
  if (r == nullptr || UCS_PTR_IS_ERR(r)) return;  // done (or the peer is gone): reply freed here
  (void)reply.release();                          // the callback frees it
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The C ABI.

namespace {
// The entry points of every operation, as named functions (a lambda's function-pointer thunk
// would not be VSHMEM_HOT and would hold the inlined body).
VSHMEM_HOT int plugin_put(void* c, int pe, uint64_t offset, const void* source, size_t bytes,
                          int nbi, char* e, size_t el) {
  return static_cast<UcxPath*>(c)->put(pe, offset, source, bytes, nbi != 0, e, el);
}
VSHMEM_HOT int plugin_get(void* c, int pe, void* dest, uint64_t offset, size_t bytes, int nbi,
                          char* e, size_t el) {
  return static_cast<UcxPath*>(c)->get(pe, dest, offset, bytes, nbi != 0, e, el);
}
VSHMEM_HOT int plugin_atomic(void* c, int pe, int op, uint64_t offset, unsigned width,
                             uint64_t operand, uint64_t compare, uint64_t* result, char* e,
                             size_t el) {
  return static_cast<UcxPath*>(c)->atomic(pe, op, offset, width, operand, compare, result, e, el);
}
VSHMEM_HOT void plugin_progress(void* c) { static_cast<UcxPath*>(c)->progress(); }
VSHMEM_HOT void plugin_wait_event(void* c, int timeout_us, int spin_us) {
  static_cast<UcxPath*>(c)->wait_event(timeout_us, spin_us);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int vshmem_transport_plugin_init(
    const vshmem_transport_init_args* args, vshmem_transport_plugin* out, char* err,
    size_t errlen) {
  if (args == nullptr || out == nullptr || args->abi_version != VSHMEM_TRANSPORT_ABI_VERSION) {
    return set_err(err, errlen, kUnsupported,
                   format("plugin ABI %d, libvshmem asked for %d", VSHMEM_TRANSPORT_ABI_VERSION,
                          args != nullptr ? args->abi_version : -1));
  }
  auto path = std::make_unique<UcxPath>(*args);
  if (int rc = path->init(*args, err, errlen)) return rc;
  vshmem_transport_plugin p{};
  p.abi_version = VSHMEM_TRANSPORT_ABI_VERSION;
  p.caps = path->caps();
  p.name = "ucx";
  p.add_region = [](void* c, uint64_t offset, size_t bytes, char* e, size_t el) {
    return static_cast<UcxPath*>(c)->add_region(offset, bytes, e, el);
  };
  p.serve = [](void* c) { static_cast<UcxPath*>(c)->serve(); };
  p.put = plugin_put;
  p.get = plugin_get;
  p.atomic = plugin_atomic;
  p.fence = [](void* c, char* e, size_t el) { return static_cast<UcxPath*>(c)->fence(e, el); };
  p.quiet = [](void* c, char* e, size_t el) { return static_cast<UcxPath*>(c)->quiet(e, el); };
  p.progress = plugin_progress;
  p.signal_add = [](void* c, int pe, uint64_t offset, uint64_t value, char* e, size_t el) {
    return static_cast<UcxPath*>(c)->signal_add(pe, offset, value, e, el);
  };
  p.finalize = [](void* c) { delete static_cast<UcxPath*>(c); };
  p.failed_peer = [](void* c, char* e, size_t el) {
    return static_cast<UcxPath*>(c)->failed_peer(e, el);
  };
  p.wait_event = plugin_wait_event;
  p.ctx = path.release();
  *out = p;
  return 0;
}
