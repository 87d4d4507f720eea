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

}  // namespace vshmem
