// Cutting a transfer into chunks with several in flight: the schedule of the remote path's
// staged transfers (GPU heap without network access to GPU memory: every chunk goes through a
// pinned host bounce buffer on each side). Header-only and free of any network type, so that the
// schedule is unit-tested on the host (tests/unit/chunk_pipeline_test.cpp).
//
// Chunks are issued in order; at most `depth` are in flight, each holding one of `depth` bounce
// buffers, which a completion frees for the next chunk. Completions may arrive in any order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vshmem {

class ChunkPipeline {
 public:
  struct Chunk {
    size_t index = 0;   // 0, 1, ... in issue order
    size_t offset = 0;  // from the start of the transfer
    size_t bytes = 0;
    int slot = -1;  // the bounce buffer it holds, 0..depth-1
  };

  ChunkPipeline(size_t total, size_t chunk_bytes, int depth)
      : total_(total),
        chunk_(chunk_bytes == 0 ? 1 : chunk_bytes),
        depth_(depth < 1 ? 1 : depth),
        slot_busy_(static_cast<size_t>(depth_), false) {}

  size_t chunks() const { return (total_ + chunk_ - 1) / chunk_; }
  int in_flight() const { return in_flight_; }
  bool done() const { return completed_ == chunks(); }
  // Another chunk may go out now: one is left, and a bounce buffer is free.
  bool can_issue() const { return next_ < chunks() && in_flight_ < depth_; }

  // The next chunk, holding a free bounce buffer. Only when can_issue().
  Chunk issue() {
    Chunk c;
    c.index = next_;
    c.offset = next_ * chunk_;
    c.bytes = std::min(chunk_, total_ - c.offset);
    for (int s = 0; s < depth_; ++s) {
      if (!slot_busy_[static_cast<size_t>(s)]) {
        slot_busy_[static_cast<size_t>(s)] = true;
        c.slot = s;
        break;
      }
    }
    ++next_;
    ++in_flight_;
    return c;
  }

  // The chunk that held `slot` has completed: its buffer is free again.
  void complete(int slot) {
    slot_busy_[static_cast<size_t>(slot)] = false;
    --in_flight_;
    ++completed_;
  }

 private:
  size_t total_;
  size_t chunk_;
  int depth_;
  size_t next_ = 0;
  size_t completed_ = 0;
  int in_flight_ = 0;
  std::vector<bool> slot_busy_;
};

// One staged transfer driven to its end: each chunk takes two steps, in this order
//   put: copy (source -> its bounce buffer), then net (sent; done when the target has it)
//   get: net (request sent; done when the reply is in the bounce buffer), then copy (-> dest)
// Both kinds of step are started and then polled, so copies of some chunks run while others are
// on the network, and a bounce buffer is reused as soon as its chunk's last step is done. Ops
// (the network and the memory provider, or a fake in tests/unit/chunk_pipeline_test.cpp):
//   int start_copy(const Chunk&, uint64_t* ticket)   int test_copy(uint64_t ticket, bool* done)
//   int start_net(const Chunk&)                      int test_net(const Chunk&, bool* done)
//   int idle()     nothing moved in a round: let the network progress; an error ends the transfer
//                  (a time limit, a failed peer)
//   void abandon(const Chunk&, bool net_started)     the transfer failed: release what a
//                  started chunk holds (its bounce buffer may still be in use by the network)
// Returns 0 or the first error; after an error no new step starts and every started chunk is
// abandoned.
template <typename Ops>
int run_staged(size_t total, size_t chunk_bytes, int depth, bool put, Ops& ops) {
  ChunkPipeline pipe(total, chunk_bytes, depth);
  enum class Stage { kIdle, kCopy, kNet };
  struct Slot {
    ChunkPipeline::Chunk chunk;
    Stage stage = Stage::kIdle;
    uint64_t ticket = 0;
    bool net_started = false;
  };
  std::vector<Slot> slots(static_cast<size_t>(depth < 1 ? 1 : depth));
  std::vector<int> order;  // slots in flight, oldest chunk first
  int failure = 0;
  const auto start = [&](Slot& s, Stage stage) {
    s.stage = stage;
    if (stage == Stage::kCopy) return ops.start_copy(s.chunk, &s.ticket);
    s.net_started = true;
    return ops.start_net(s.chunk);
  };
  while (failure == 0 && !pipe.done()) {
    bool moved = false;
    while (failure == 0 && pipe.can_issue()) {
      const ChunkPipeline::Chunk c = pipe.issue();
      Slot& s = slots[static_cast<size_t>(c.slot)];
      s = Slot{c, Stage::kIdle, 0, false};
      order.push_back(c.slot);
      failure = start(s, put ? Stage::kCopy : Stage::kNet);
      moved = true;
    }
    for (size_t i = 0; failure == 0 && i < order.size();) {
      Slot& s = slots[static_cast<size_t>(order[i])];
      bool done = false;
      failure =
          s.stage == Stage::kCopy ? ops.test_copy(s.ticket, &done) : ops.test_net(s.chunk, &done);
      if (failure != 0 || !done) {
        ++i;
        continue;
      }
      moved = true;
      if ((s.stage == Stage::kCopy) == put) {
        failure = start(s, put ? Stage::kNet : Stage::kCopy);  // the chunk's second step
        ++i;
        continue;
      }
      s.stage = Stage::kIdle;  // both steps done: its bounce buffer is free
      pipe.complete(s.chunk.slot);
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (failure == 0 && !moved) failure = ops.idle();
  }
  if (failure != 0) {
    for (int slot : order) {
      const Slot& s = slots[static_cast<size_t>(slot)];
      ops.abandon(s.chunk, s.net_started);
    }
  }
  return failure;
}

}  // namespace vshmem
