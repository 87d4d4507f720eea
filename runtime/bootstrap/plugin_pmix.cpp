// The PMIx bootstrap plugin (libvshmem_bootstrap_pmix.so): for jobs started by a PMIx launcher
// (Open MPI's mpirun, PRRTE's prterun, Slurm's srun --mpi=pmix). Loaded with dlopen so that only
// this file links PMIx.
//
// allgather: every PE puts its contribution under the allgather key, commits, and fences with
// data collection; then it reads every PE's value. broadcast: the root puts, all fence, the
// others read. barrier: a fence without data. Every fence carries PMIX_TIMEOUT.
// Two keys serve every collective, alternately (a put replaces the value): PMIx cannot delete a
// key, and every fence with data collection carries every key a process ever put, so a new key
// per collective made each collective cost more than the last. Two are needed because a PE that
// leaves a fence first may put the next collective's value while a slower PE still reads this
// one's; it cannot get further ahead than that, since the next fence waits for the slow PE. A
// value also carries the collective's sequence number, checked on every read, so that an
// earlier value is never taken for this one. Values are padded to a power-of-two size class with
// a key pair per class (see put()).
// A key put again is not seen again by every PMIx: PMIx 4.2 serves the new value, but OpenPMIx 5
// (gds/hash) keeps the copy of a peer's data that the client fetched first and serves it until
// PMIX_GET_REFRESH_CACHE asks the server again (openpmix issues 3368 and 3738; 3738 reports the
// refresh ignored too). So a value older than this collective is fetched again with that flag,
// and the first shmem_init tries the whole scheme once on a probe key: where no PE can see a
// replaced value even so, every collective gets a key of its own (correct everywhere, but each
// collective then costs a little more than the last).
// PMIx does not say which processes were missing when a fence times out, so that message
// cannot name them; a process that dies is reported by the PMIx server (the fence fails).
#include <pmix.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <vector>

#include "runtime/bootstrap/gather_round.hpp"
#include "runtime/bootstrap/plugin_abi.h"
#include "runtime/common/status.hpp"

namespace {

using vshmem::Code;

// Process-wide, not per bootstrap: sequence numbers never repeat across shmem_init /
// shmem_finalize cycles, so a value left from an earlier cycle is never taken for a new one.
uint64_t g_seq = 0;
// How collectives name their keys, chosen by every PE together at the first init (probe_reuse).
enum class KeyScheme { kReuse, kUnique };
KeyScheme g_scheme = KeyScheme::kReuse;
// PMIx_Init calls not yet matched by a PMIx_Finalize. PMIx is finalized at exit, not at
// shmem_finalize: a PE that finalizes PMIx while its peers still fence (they leave
// shmem_finalize at different times) makes their fences fail, and the next shmem_init needs it.
int g_pmix_inits = 0;

struct Ctx {
  pmix_proc_t me;
  int rank = 0;
  int size = 1;
  long timeout_ms = 120000;
  int log_level = 1;  // libvshmem's (vshmem_bootstrap_init_args::log_level)
  int broken = 0;
  std::string broken_text;
  // Set when the PMIx answered a get with PMIX_GET_REFRESH_CACHE by PMIX_ERR_NOT_SUPPORTED (Open
  // MPI 4.1.6's server on Ubuntu 24.04 does): later refreshes are plain gets.
  bool no_refresh = false;
};

int report(char* err, size_t errlen, Code code, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int report(char* err, size_t errlen, Code code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err != nullptr && errlen > 0) std::vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return static_cast<int>(code);
}

int fail(Ctx* c, char* err, size_t errlen, Code code, const char* call, const std::string& cause) {
  c->broken = static_cast<int>(code);
  c->broken_text = std::string(call) + ": " + cause;
  return report(err, errlen, code, "%s", c->broken_text.c_str());
}

std::string seconds(long ms) { return vshmem::gather::seconds(std::chrono::milliseconds(ms)); }

// Fence over the whole job, with a time limit (PMIx counts it in whole seconds).
int fence(Ctx* c, bool collect, const char* call, char* err, size_t errlen) {
  pmix_proc_t all;
  PMIX_LOAD_PROCID(&all, c->me.nspace, PMIX_RANK_WILDCARD);
  int timeout_s = static_cast<int>(std::max<long>(1, (c->timeout_ms + 999) / 1000));
  bool collect_data = collect;
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
  PMIX_INFO_LOAD(&info[1], PMIX_COLLECT_DATA, &collect_data, PMIX_BOOL);
  pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc == PMIX_ERR_TIMEOUT) {
    return fail(c, err, errlen, Code::kTimeout, call,
                "timed out after " + seconds(c->timeout_ms) +
                    " in PMIx_Fence (PMIx does not tell which PEs did not arrive)");
  }
  if (rc != PMIX_SUCCESS) {
    return fail(c, err, errlen, Code::kPeerFailure, call,
                std::string("PMIx_Fence: ") + PMIx_Error_string(rc) +
                    " (a PE died or the launcher ended the job)");
  }
  return 0;
}

// A value: {sequence number, length, kind, 0}, then the data. The kind names the collective in
// a message when PEs disagree.
constexpr size_t kFrameHeader = 3 * sizeof(uint64_t);
enum : uint64_t { kAllgather = 1, kBroadcast = 2, kProbe = 3 };

const char* kind_name(uint64_t kind) {
  switch (kind) {
    case kAllgather: return "allgather";
    case kBroadcast: return "broadcast";
    case kProbe: return "probe";
    default: return "unknown collective";
  }
}

// What a PE is doing: sequence number, kind and byte count.
struct Step {
  uint64_t seq;
  uint64_t kind;
  uint64_t bytes;
};

std::string describe(const Step& s) {
  return "#" + std::to_string(s.seq) + " (" + kind_name(s.kind) + " of " + std::to_string(s.bytes) +
         " bytes)";
}

// The size class of a value: the header and the data, rounded up to a power of two.
size_t slot_bytes(size_t bytes) {
  size_t s = 64;
  while (s < kFrameHeader + bytes) s *= 2;
  return s;
}

int put(Ctx* c, const std::string& key, const Step& step, const void* data, const char* call,
        char* err, size_t errlen) {
  const size_t bytes = step.bytes;
  // The value is the sequence number of this collective, the length, then the data, padded to
  // the key's size class: a key's value never changes size (PMIx 4.2 loses a value that is
  // replaced by one of another size: the next get answers NOT-FOUND).
  std::vector<char> framed(slot_bytes(bytes), '\0');
  std::memcpy(framed.data(), &step.seq, sizeof(uint64_t));
  std::memcpy(framed.data() + sizeof(uint64_t), &step.bytes, sizeof(uint64_t));
  std::memcpy(framed.data() + 2 * sizeof(uint64_t), &step.kind, sizeof(uint64_t));
  if (bytes > 0) std::memcpy(framed.data() + kFrameHeader, data, bytes);
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  // PMIx_Put copies the value; the pointer only satisfies the C struct.
  v.data.bo.bytes = framed.data();
  v.data.bo.size = framed.size();
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) {
    return fail(c, err, errlen, Code::kSystem, call,
                std::string("PMIx_Put/Commit: ") + PMIx_Error_string(rc));
  }
  return 0;
}

// One PMIx_Get of a peer's framed value; `refresh` asks the PMIx server again instead of the
// client's copy. On success *peer holds the header and the value is kept in *v.
pmix_status_t get_once(Ctx* c, int rank, const std::string& key, bool refresh, pmix_value_t** v) {
  pmix_proc_t p;
  PMIX_LOAD_PROCID(&p, c->me.nspace, static_cast<pmix_rank_t>(rank));
  if (!refresh || c->no_refresh) return PMIx_Get(&p, key.c_str(), nullptr, 0, v);
  bool yes = true;
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  PMIX_INFO_LOAD(&info, PMIX_GET_REFRESH_CACHE, &yes, PMIX_BOOL);
  pmix_status_t rc = PMIx_Get(&p, key.c_str(), &info, 1, v);
  PMIX_INFO_DESTRUCT(&info);
  if (rc != PMIX_ERR_NOT_SUPPORTED) return rc;
  // This PMIx cannot fetch again: a replaced value may stay unseen, which the caller finds out
  // from the value's sequence number (the probe then chooses a key per collective).
  c->no_refresh = true;
  return PMIx_Get(&p, key.c_str(), nullptr, 0, v);
}

// The header of a framed value, or false when it is too short to hold one.
bool read_header(const pmix_value_t* v, Step* s) {
  if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size < kFrameHeader) return false;
  std::memcpy(&s->seq, v->data.bo.bytes, sizeof(uint64_t));
  std::memcpy(&s->bytes, v->data.bo.bytes + sizeof(uint64_t), sizeof(uint64_t));
  std::memcpy(&s->kind, v->data.bo.bytes + 2 * sizeof(uint64_t), sizeof(uint64_t));
  return true;
}

// Reads PE `rank`'s value of step `want` under `key` into out. A value from an earlier step is
// a copy PMIx kept (see the top of the file): it is fetched again from the server, a few times
// with a short pause in case the server's copy is updated late. *stale (when given) is set
// instead of failing when even that keeps the earlier value.
int get(Ctx* c, int rank, const std::string& key, const Step& want, void* out, const char* call,
        char* err, size_t errlen, bool* stale = nullptr) {
  constexpr int kRefreshes = 4;
  pmix_value_t* v = nullptr;
  Step peer{0, 0, 0};
  int refreshes = 0;
  for (;;) {
    pmix_status_t rc = get_once(c, rank, key, refreshes > 0, &v);
    if (rc == PMIX_ERR_NOT_FOUND && refreshes < kRefreshes) {
      // A client that holds a copy of the peer's data may answer from it, without a key put
      // since: ask the server.
      if (refreshes > 0) usleep(1000u << refreshes);
      ++refreshes;
      continue;
    }
    if (rc != PMIX_SUCCESS || v == nullptr) {
      return fail(
          c, err, errlen, Code::kPeerFailure, call,
          "PMIx_Get(PE " + std::to_string(rank) + ", key " + key + "): " + PMIx_Error_string(rc));
    }
    if (!read_header(v, &peer)) {
      PMIX_VALUE_RELEASE(v);
      return fail(c, err, errlen, Code::kInvalidArgument, call,
                  "PMIx_Get(PE " + std::to_string(rank) + ", key " + key +
                      "): not a value this runtime wrote");
    }
    if (peer.seq >= want.seq || refreshes == kRefreshes) break;
    PMIX_VALUE_RELEASE(v);
    if (refreshes > 0) usleep(1000u << refreshes);
    ++refreshes;
  }
  int result = 0;
  if (peer.seq < want.seq && stale != nullptr) {
    *stale = true;
  } else if (peer.seq < want.seq) {
    result =
        fail(c, err, errlen, Code::kInvalidArgument, call,
             "PEs disagree: under PMIx key " + key + ", PE " + std::to_string(rank) +
                 "'s value is from its collective " + describe(peer) + ", this PE is at " +
                 describe(want) + ", and " + std::to_string(refreshes) +
                 " reads with PMIX_GET_REFRESH_CACHE returned that value again. Either PE " +
                 std::to_string(rank) + " called fewer bootstrap collectives than this PE, or " +
                 PMIx_Get_version() + " keeps serving an old copy of a key that was put again");
  } else if (peer.seq > want.seq) {
    result = fail(c, err, errlen, Code::kInvalidArgument, call,
                  "PEs disagree: under PMIx key " + key + ", PE " + std::to_string(rank) +
                      " is at collective " + describe(peer) + ", this PE at " + describe(want) +
                      " (this PE called fewer bootstrap collectives than PE " +
                      std::to_string(rank) + ")");
  } else if (peer.kind != want.kind || peer.bytes != want.bytes ||
             v->data.bo.size < kFrameHeader + peer.bytes) {
    result = fail(c, err, errlen, Code::kInvalidArgument, call,
                  "PEs disagree: PE " + std::to_string(rank) + " called collective " +
                      describe(peer) + ", this PE " + describe(want));
  } else if (want.bytes > 0) {
    std::memcpy(out, v->data.bo.bytes + kFrameHeader, want.bytes);
  }
  PMIX_VALUE_RELEASE(v);
  return result;
}

// The key of collective `seq` carrying `bytes` (see the top of the file).
std::string key_for(uint64_t seq, size_t bytes) {
  if (g_scheme == KeyScheme::kUnique) return "vshmem.boot.u." + std::to_string(seq);
  return "vshmem.boot." + std::to_string(seq % 2) + "." + std::to_string(slot_bytes(bytes));
}

int plugin_allgather(void* ctx, const void* in, void* out, size_t bytes, char* err, size_t errlen) {
  auto* c = static_cast<Ctx*>(ctx);
  if (c->broken)
    return report(err, errlen, static_cast<Code>(c->broken), "%s", c->broken_text.c_str());
  const Step step{++g_seq, kAllgather, bytes};
  const std::string key = key_for(g_seq, bytes);
  if (int rc = put(c, key, step, in, "allgather", err, errlen)) return rc;
  if (int rc = fence(c, true, "allgather", err, errlen)) return rc;
  // Into scratch first: out is written only on success, and in may alias out.
  std::vector<char> all(bytes * c->size);
  for (int r = 0; r < c->size; ++r) {
    if (r == c->rank) {
      if (bytes > 0) std::memcpy(all.data() + r * bytes, in, bytes);
      continue;
    }
    if (int rc = get(c, r, key, step, all.data() + r * bytes, "allgather", err, errlen)) {
      return rc;
    }
  }
  if (!all.empty()) std::memcpy(out, all.data(), all.size());
  return 0;
}

int plugin_broadcast(void* ctx, void* buf, size_t bytes, int root, char* err, size_t errlen) {
  auto* c = static_cast<Ctx*>(ctx);
  if (c->broken)
    return report(err, errlen, static_cast<Code>(c->broken), "%s", c->broken_text.c_str());
  const Step step{++g_seq, kBroadcast, bytes};
  const std::string key = key_for(g_seq, bytes);
  if (c->rank == root) {
    if (int rc = put(c, key, step, buf, "broadcast", err, errlen)) return rc;
  }
  if (int rc = fence(c, true, "broadcast", err, errlen)) return rc;
  if (c->rank != root) {
    std::vector<char> tmp(bytes);
    if (int rc = get(c, root, key, step, tmp.data(), "broadcast", err, errlen)) return rc;
    if (bytes > 0) std::memcpy(buf, tmp.data(), bytes);
  }
  return 0;
}

int plugin_barrier(void* ctx, char* err, size_t errlen) {
  auto* c = static_cast<Ctx*>(ctx);
  if (c->broken)
    return report(err, errlen, static_cast<Code>(c->broken), "%s", c->broken_text.c_str());
  ++g_seq;
  return fence(c, false, "barrier", err, errlen);
}

// Tries the key-reuse scheme once, at the first init, on a key of its own: every PE puts a value,
// all read it, every PE puts another under the same key, all read again (fetching again from the
// server if need be, as get() does). Then all agree, under a key used once: if any PE still saw
// the first value, every collective of this process gets a key of its own. Four fences.
int probe_reuse(Ctx* c, char* err, size_t errlen) {
  const char* call = "init (PMIx key reuse probe)";
  const std::string key = "vshmem.probe";
  bool stale = false;
  for (uint64_t round = 1; round <= 2; ++round) {
    const Step step{round, kProbe, sizeof(uint64_t)};
    const uint64_t mine = (round << 32) | static_cast<uint64_t>(c->rank);
    if (int rc = put(c, key, step, &mine, call, err, errlen)) return rc;
    if (int rc = fence(c, true, call, err, errlen)) return rc;
    for (int r = 0; r < c->size; ++r) {
      if (r == c->rank) continue;
      uint64_t got = 0;
      bool old = false;
      if (int rc = get(c, r, key, step, &got, call, err, errlen, &old)) return rc;
      if (!old && got != ((round << 32) | static_cast<uint64_t>(r))) {
        return fail(c, err, errlen, Code::kSystem, call,
                    "PMIx_Get(PE " + std::to_string(r) + ", key " + key +
                        ") returned a value that PE never put");
      }
      stale = stale || old;
    }
    // Nobody puts the second value before every PE has read the first.
    if (round == 1) {
      if (int rc = fence(c, false, call, err, errlen)) return rc;
    }
  }
  const Step verdict{3, kProbe, sizeof(uint64_t)};
  const std::string verdict_key = "vshmem.probe.verdict";
  const uint64_t mine = stale ? 1 : 0;
  if (int rc = put(c, verdict_key, verdict, &mine, call, err, errlen)) return rc;
  if (int rc = fence(c, true, call, err, errlen)) return rc;
  uint64_t any_stale = mine;
  for (int r = 0; r < c->size; ++r) {
    if (r == c->rank) continue;
    uint64_t theirs = 0;
    if (int rc = get(c, r, verdict_key, verdict, &theirs, call, err, errlen)) return rc;
    any_stale |= theirs;
  }
  g_scheme = any_stale ? KeyScheme::kUnique : KeyScheme::kReuse;
  if (c->log_level >= 2 && c->rank == 0) {  // info
    std::fprintf(stderr, "vshmem: PE 0: PMIx bootstrap (%s): %s\n", PMIx_Get_version(),
                 any_stale ? "a key put again is not seen again, even with "
                             "PMIX_GET_REFRESH_CACHE: every collective uses a key of its own "
                             "(each costs a little more than the last)"
                           : "collectives reuse a few keys (a replaced value is seen, fetched "
                             "again where needed)");
  }
  return 0;
}

void plugin_finalize(void* ctx) { delete static_cast<Ctx*>(ctx); }

// This process, for the event handler (set by the first init; PMIx stays initialized until exit).
pmix_proc_t g_me;

// A PE of this job ended abnormally (or this process lost its PMIx server): the survivors would
// wait for it forever in their next barrier or wait_until, under a launcher that does not stop
// the job itself (e.g. mpirun --enable-recovery, srun without --kill-on-bad-exit). End this PE
// with a message that names the PE that is gone.
void on_peer_failure(size_t, pmix_status_t status, const pmix_proc_t* source, pmix_info_t info[],
                     size_t ninfo, pmix_info_t*, size_t, pmix_event_notification_cbfunc_fn_t cbfunc,
                     void* cbdata) {
  const pmix_proc_t* who = source;
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC) {
      who = info[i].value.data.proc;
    }
  }
  const bool lost_server = status == PMIX_ERR_LOST_CONNECTION;
  const bool peer = who != nullptr && PMIX_CHECK_NSPACE(who->nspace, g_me.nspace) &&
                    who->rank != g_me.rank && who->rank != PMIX_RANK_WILDCARD &&
                    who->rank != PMIX_RANK_UNDEF;
  if (lost_server || peer) {
    char text[512];
    if (lost_server) {
      std::snprintf(text, sizeof(text),
                    "vshmem: PE %u: lost the connection to the PMIx server (the launcher ended?); "
                    "ending this PE\n",
                    g_me.rank);
    } else {
      std::snprintf(text, sizeof(text),
                    "vshmem: PE %u: PE %u ended without shmem_finalize (PMIx event: %s); the job "
                    "cannot complete: ending this PE\n",
                    g_me.rank, who->rank, PMIx_Error_string(status));
    }
    std::fflush(stdout);
    (void)!::write(2, text, std::strlen(text));
    std::_Exit(1);
  }
  if (cbfunc != nullptr) cbfunc(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, cbdata);
}

void register_failure_events() {
  pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTED_BY_SIG,
                           PMIX_ERR_PROC_ABORTING, PMIX_ERR_PROC_TERM_WO_SYNC,
                           PMIX_ERR_LOST_CONNECTION};
  PMIx_Register_event_handler(codes, sizeof(codes) / sizeof(codes[0]), nullptr, 0, on_peer_failure,
                              nullptr, nullptr);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int vshmem_bootstrap_plugin_init(
    const vshmem_bootstrap_init_args* args, vshmem_bootstrap_plugin* out, char* err,
    size_t errlen) {
  if (args == nullptr || args->abi_version != VSHMEM_BOOTSTRAP_ABI_VERSION) {
    return report(err, errlen, Code::kUnsupported,
                  "init: plugin ABI mismatch (libvshmem speaks %d, "
                  "the plugin %d)",
                  args ? args->abi_version : -1, VSHMEM_BOOTSTRAP_ABI_VERSION);
  }
  auto* c = new Ctx;
  c->timeout_ms = args->timeout_ms;
  c->log_level = args->log_level;
  pmix_status_t rc = PMIx_Init(&c->me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    delete c;
    return report(err, errlen, Code::kSystem,
                  "init: PMIx_Init: %s (was this process started by a PMIx launcher such as "
                  "mpirun, prterun or srun --mpi=pmix?)",
                  PMIx_Error_string(rc));
  }
  pmix_proc_t wildcard;
  PMIX_LOAD_PROCID(&wildcard, c->me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* v = nullptr;
  rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS || v == nullptr) {
    PMIx_Finalize(nullptr, 0);
    delete c;
    return report(err, errlen, Code::kSystem, "init: PMIx_Get(PMIX_JOB_SIZE): %s",
                  PMIx_Error_string(rc));
  }
  uint32_t size = 0;
  switch (v->type) {
    case PMIX_UINT32: size = v->data.uint32; break;
    case PMIX_INT: size = static_cast<uint32_t>(v->data.integer); break;
    case PMIX_UINT64: size = static_cast<uint32_t>(v->data.uint64); break;
    default: size = 0;
  }
  PMIX_VALUE_RELEASE(v);
  if (size == 0 || c->me.rank >= size) {
    const unsigned rank = c->me.rank;
    PMIx_Finalize(nullptr, 0);
    delete c;
    return report(err, errlen, Code::kSystem, "init: PMIx reports job size %u for rank %u", size,
                  rank);
  }
  c->rank = static_cast<int>(c->me.rank);
  c->size = static_cast<int>(size);
  // This plugin is never unloaded, so the handler stays valid until exit.
  if (g_pmix_inits++ == 0) {
    g_me = c->me;
    register_failure_events();
    std::atexit([] {
      while (g_pmix_inits > 0) {
        --g_pmix_inits;
        PMIx_Finalize(nullptr, 0);
      }
    });
    // Once per process: every PE of the job is in its first init together.
    if (c->size > 1) {
      if (int rc = probe_reuse(c, err, errlen)) {
        delete c;
        return rc;
      }
    }
  }
  out->abi_version = VSHMEM_BOOTSTRAP_ABI_VERSION;
  out->ctx = c;
  out->rank = c->rank;
  out->size = c->size;
  out->allgather = plugin_allgather;
  out->broadcast = plugin_broadcast;
  out->barrier = plugin_barrier;
  out->finalize = plugin_finalize;
  return 0;
}
