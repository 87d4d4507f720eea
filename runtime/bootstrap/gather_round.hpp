// One collective of a gather-at-root bootstrap, as PE 0 runs it: the socket hub
// (socket_bootstrap.cpp) and the MPI plugin's rank 0 (plugin_mpi.cpp) move the bytes, this says
// what every PE must send, whether the collective it announced is ours, where its contribution
// goes, which PEs are still missing when time runs out, and what the result is. Header-only: the
// MPI plugin is a separate library that links nothing of libvshmem.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace vshmem::gather {

enum Op : uint32_t { kAllgather = 1, kBroadcast = 2, kBarrier = 3 };

// What a PE called: the same on every PE of one collective.
struct Call {
  uint32_t op = 0;
  uint64_t seq = 0;  // the collective's number, counted by every PE
  uint64_t bytes = 0;
  int32_t root = 0;  // broadcast only
};

inline const char* op_name(uint32_t op) {
  switch (op) {
    case kAllgather: return "allgather";
    case kBroadcast: return "broadcast";
    case kBarrier: return "barrier";
    default: return "an unknown operation";
  }
}

inline std::string describe(const Call& c) {
  char b[96];
  switch (c.op) {
    case kAllgather:
      std::snprintf(b, sizeof(b), "allgather(%llu bytes)",
                    static_cast<unsigned long long>(c.bytes));
      break;
    case kBroadcast:
      std::snprintf(b, sizeof(b), "broadcast(%llu bytes, root %d)",
                    static_cast<unsigned long long>(c.bytes), c.root);
      break;
    case kBarrier: std::snprintf(b, sizeof(b), "barrier()"); break;
    default: std::snprintf(b, sizeof(b), "operation %u", c.op);
  }
  return b;
}

// "3, 5, 7": how PEs are named in every time-out message.
inline std::string pe_list(const std::vector<int>& pes) {
  std::string s;
  for (size_t i = 0; i < pes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(pes[i]);
  }
  return s;
}

// Seconds as printed in messages: "120 s", "2.5 s".
inline std::string seconds(std::chrono::milliseconds d) {
  char b[32];
  if (d.count() % 1000 == 0) {
    std::snprintf(b, sizeof(b), "%lld s", static_cast<long long>(d.count() / 1000));
  } else {
    std::snprintf(b, sizeof(b), "%g s", static_cast<double>(d.count()) / 1000.0);
  }
  return b;
}

// The bytes PE `rank` sends with its call: its block of an allgather, the root's buffer of a
// broadcast, nothing else.
inline size_t contribution_bytes(const Call& c, int rank) {
  return c.op == kAllgather || (c.op == kBroadcast && c.root == rank) ? c.bytes : 0;
}

// The bytes every PE receives: npes blocks of an allgather, the root's buffer of a broadcast.
inline size_t result_bytes(const Call& c, int npes) {
  return c.op == kAllgather   ? c.bytes * static_cast<size_t>(npes)
         : c.op == kBroadcast ? c.bytes
                              : 0;
}

// PE 0's side of one collective. Contributions land in the round's own buffer, so the caller's
// output is written only once every PE arrived.
class Round {
 public:
  // `in`: PE 0's block of an allgather, or the buffer of a broadcast rooted at PE 0.
  Round(const Call& mine, int npes, const void* in)
      : mine_(mine), npes_(npes), in_(in), arrived_(npes, false) {
    arrived_[0] = true;
    count_ = 1;
    if (mine.op == kAllgather) {
      scratch_.resize(result_bytes(mine, npes));
      if (mine.bytes > 0) std::memcpy(scratch_.data(), in, mine.bytes);
    } else if (mine.op == kBroadcast && mine.root != 0) {
      scratch_.resize(mine.bytes);
    }
  }

  const Call& call() const { return mine_; }
  // Whether PE r announced the same collective as ours.
  bool same(const Call& theirs) const {
    return theirs.op == mine_.op && theirs.bytes == mine_.bytes && theirs.seq == mine_.seq &&
           (mine_.op != kBroadcast || theirs.root == mine_.root);
  }
  // The message when PE r announced `theirs` instead.
  std::string disagreement(int r, const Call& theirs) const {
    return "PEs disagree: PE " + std::to_string(r) + " called " + describe(theirs) +
           " (collective #" + std::to_string(theirs.seq) + ") while PE 0 called " +
           describe(mine_) + " (collective #" + std::to_string(mine_.seq) + ")";
  }
  // Where PE r's contribution goes: contribution_bytes(call(), r) bytes.
  char* slot(int r) {
    if (mine_.op == kAllgather) return scratch_.data() + static_cast<size_t>(r) * mine_.bytes;
    if (mine_.op == kBroadcast && r == mine_.root) return scratch_.data();
    return nullptr;
  }
  // PE r's call and contribution are all here.
  void arrived(int r) {
    if (!arrived_[r]) {
      arrived_[r] = true;
      ++count_;
    }
  }
  bool has_arrived(int r) const { return arrived_[r]; }
  bool complete() const { return count_ == npes_; }
  std::vector<int> missing() const {
    std::vector<int> out;
    for (int r = 1; r < npes_; ++r) {
      if (!arrived_[r]) out.push_back(r);
    }
    return out;
  }
  // At the deadline: "timed out after 120 s waiting for PEs 3, 5".
  std::string missing_text(std::chrono::milliseconds timeout) const {
    const std::vector<int> late = missing();
    return "timed out after " + seconds(timeout) + " waiting for PE" +
           (late.size() > 1 ? "s " : " ") + pe_list(late);
  }
  // What every PE receives, once complete().
  const void* result() const {
    if (mine_.op == kBroadcast && mine_.root == 0) return in_;
    return scratch_.data();
  }
  size_t result_len() const { return result_bytes(mine_, npes_); }

 private:
  Call mine_;
  int npes_;
  const void* in_;
  std::vector<bool> arrived_;
  int count_ = 0;
  std::vector<char> scratch_;
};

}  // namespace vshmem::gather
