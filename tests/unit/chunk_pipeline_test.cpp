// The schedule of the remote path's staged transfers (runtime/transport/chunk_pipeline.hpp):
// every byte is covered exactly once, in order; never more than `depth` chunks in flight; a
// bounce buffer is never held by two chunks at once; completions in any order.
#include "runtime/transport/chunk_pipeline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

namespace vshmem {
namespace {

struct Outcome {
  size_t max_in_flight = 0;
  size_t chunks = 0;
};

// Drives a pipeline to the end, completing a random in-flight chunk whenever none can be issued.
Outcome drive(size_t total, size_t chunk, int depth, uint64_t seed) {
  ChunkPipeline pipe(total, chunk, depth);
  std::mt19937_64 gen(seed);
  std::vector<ChunkPipeline::Chunk> in_flight;
  std::vector<int> holder(static_cast<size_t>(depth), -1);
  size_t covered = 0;
  Outcome run;
  while (!pipe.done()) {
    if (pipe.can_issue() && (in_flight.empty() || gen() % 2 == 0)) {
      ChunkPipeline::Chunk c = pipe.issue();
      EXPECT_EQ(c.index, run.chunks);
      EXPECT_EQ(c.offset, covered);  // in order, no gap, no overlap
      EXPECT_GT(c.bytes, 0u);
      EXPECT_LE(c.bytes, chunk);
      EXPECT_GE(c.slot, 0);
      EXPECT_LT(c.slot, depth);
      EXPECT_EQ(holder[static_cast<size_t>(c.slot)], -1) << "bounce buffer held twice";
      holder[static_cast<size_t>(c.slot)] = static_cast<int>(c.index);
      covered += c.bytes;
      ++run.chunks;
      in_flight.push_back(c);
      run.max_in_flight = std::max(run.max_in_flight, in_flight.size());
      EXPECT_EQ(static_cast<size_t>(pipe.in_flight()), in_flight.size());
    } else {
      EXPECT_FALSE(in_flight.empty()) << "stuck: nothing to issue and nothing in flight";
      if (in_flight.empty()) break;
      size_t k = gen() % in_flight.size();
      holder[static_cast<size_t>(in_flight[k].slot)] = -1;
      pipe.complete(in_flight[k].slot);
      in_flight.erase(in_flight.begin() + static_cast<long>(k));
    }
  }
  EXPECT_EQ(covered, total);
  EXPECT_TRUE(in_flight.empty());
  return run;
}

TEST(ChunkPipeline, CoversEveryByteOnceWithBoundedChunksInFlight) {
  std::mt19937_64 seeds(std::random_device{}());
  for (size_t total : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{1} << 20,
                       (size_t{5} << 20) + 17}) {
    for (int depth : {1, 2, 4, 7}) {
      Outcome r = drive(total, 4096, depth, seeds());
      EXPECT_EQ(r.chunks, (total + 4095) / 4096);
      EXPECT_LE(r.max_in_flight, static_cast<size_t>(depth));
    }
  }
}

TEST(ChunkPipeline, FillsThePipelineWhenCompletionsLag) {
  // Completing only when forced: the pipeline must reach its full depth on a long transfer.
  ChunkPipeline pipe(size_t{64} << 10, 4096, 4);
  std::deque<int> slots;
  size_t most = 0;
  while (!pipe.done()) {
    while (pipe.can_issue()) slots.push_back(pipe.issue().slot);
    most = std::max(most, slots.size());
    pipe.complete(slots.front());
    slots.pop_front();
  }
  EXPECT_EQ(most, 4u);
}

TEST(ChunkPipeline, EmptyTransferIsDoneAtOnce) {
  ChunkPipeline pipe(0, 4096, 4);
  EXPECT_TRUE(pipe.done());
  EXPECT_FALSE(pipe.can_issue());
  EXPECT_EQ(pipe.chunks(), 0u);
}

// run_staged with a fake network and copy engine that finish each step after a random number of
// polls, and move the bytes only when a step finishes (as an asynchronous copy and a rendezvous
// read do): a bounce buffer reused before its chunk is done, a step started out of order, or a
// byte moved twice or never shows in the data or in the checks.
struct FakeStaged {
  enum class Kind { kCopy, kNet };
  struct Step {
    Kind kind;
    size_t chunk;
    int slot;
    size_t offset, bytes;
    int polls_left;
    bool done = false;
  };
  FakeStaged(bool put_, size_t total, size_t chunk_bytes, int depth_, uint64_t seed)
      : put(put_),
        chunk(chunk_bytes),
        depth(depth_),
        gen(seed),
        local(total),
        remote(total),
        bounce(static_cast<size_t>(depth_), std::vector<uint8_t>(chunk_bytes)),
        holder(static_cast<size_t>(depth_), -1),
        copied(total / chunk_bytes + 2, false) {
    for (auto& b : local) b = static_cast<uint8_t>(gen());
    for (auto& b : remote) b = static_cast<uint8_t>(gen());
    for (auto& b : bounce) std::memset(b.data(), 0xa5, b.size());  // poison
  }
  int polls() { return static_cast<int>(gen() % 4); }
  int running(Kind k) const {
    int n = 0;
    for (const Step& s : steps) n += (!s.done && s.kind == k) ? 1 : 0;
    return n;
  }
  void note_overlap() {
    if (running(Kind::kCopy) > 0 && running(Kind::kNet) > 0) overlapped = true;
  }
  void hold(const ChunkPipeline::Chunk& c) {
    int& h = holder[static_cast<size_t>(c.slot)];
    if (h != -1 && h != static_cast<int>(c.index)) {
      ADD_FAILURE() << "bounce buffer " << c.slot << " taken by chunk " << c.index
                    << " while chunk " << h << " holds it";
    }
    h = static_cast<int>(c.index);
  }

  int start_copy(const ChunkPipeline::Chunk& c, uint64_t* ticket) {
    hold(c);
    // put: the first step; get: only after the chunk's reply arrived.
    EXPECT_EQ(copied[c.index], false) << "chunk " << c.index << " copied twice";
    if (!put) {
      EXPECT_TRUE(net_done(c.index)) << "get: chunk " << c.index << " copied before its reply";
    }
    copied[c.index] = true;
    steps.push_back({Kind::kCopy, c.index, c.slot, c.offset, c.bytes, polls()});
    *ticket = steps.size();
    note_overlap();
    return 0;
  }
  int test_copy(uint64_t ticket, bool* done) {
    Step& s = steps[ticket - 1];
    EXPECT_EQ(s.kind, Kind::kCopy);
    EXPECT_FALSE(s.done) << "a spent ticket tested again";
    if (s.polls_left-- > 0) {
      *done = false;
      return 0;
    }
    s.done = true;
    auto& b = bounce[static_cast<size_t>(s.slot)];
    if (put) {
      std::memcpy(b.data(), local.data() + s.offset, s.bytes);
    } else {
      std::memcpy(local.data() + s.offset, b.data(), s.bytes);
      holder[static_cast<size_t>(s.slot)] = -1;  // the get's last step
    }
    *done = true;
    return 0;
  }
  bool net_done(size_t chunk_index) const {
    for (const Step& s : steps) {
      if (s.kind == Kind::kNet && s.chunk == chunk_index) return s.done;
    }
    return false;
  }
  bool copy_done(size_t chunk_index) const {
    for (const Step& s : steps) {
      if (s.kind == Kind::kCopy && s.chunk == chunk_index) return s.done;
    }
    return false;
  }
  int start_net(const ChunkPipeline::Chunk& c) {
    if (put) {
      EXPECT_TRUE(copy_done(c.index)) << "put: chunk " << c.index << " sent before its copy";
    } else {
      hold(c);
    }
    ++nets_started;
    steps.push_back({Kind::kNet, c.index, c.slot, c.offset, c.bytes, polls()});
    note_overlap();
    return fail_net_start == static_cast<int>(c.index) ? 7 : 0;
  }
  int test_net(const ChunkPipeline::Chunk& c, bool* done) {
    for (Step& s : steps) {
      if (s.kind != Kind::kNet || s.chunk != c.index) continue;
      EXPECT_FALSE(s.done) << "chunk " << c.index << " tested after it was done";
      if (fail_net_test == static_cast<int>(c.index)) return 9;
      if (s.polls_left-- > 0) {
        *done = false;
        return 0;
      }
      s.done = true;
      auto& b = bounce[static_cast<size_t>(s.slot)];
      if (put) {
        std::memcpy(remote.data() + s.offset, b.data(), s.bytes);  // the target reads it now
        holder[static_cast<size_t>(s.slot)] = -1;
      } else {
        std::memcpy(b.data(), remote.data() + s.offset, s.bytes);  // the reply lands now
      }
      *done = true;
      return 0;
    }
    ADD_FAILURE() << "tested chunk " << c.index << " was never sent";
    return 1;
  }
  int idle() {
    ++idles;
    return idles > fail_after_idles ? 11 : 0;
  }
  void abandon(const ChunkPipeline::Chunk& c, bool net_started) {
    abandoned.push_back(c.index);
    (void)net_started;
  }

  bool put;
  size_t chunk;
  int depth;
  std::mt19937_64 gen;
  std::vector<uint8_t> local, remote;
  std::vector<std::vector<uint8_t>> bounce;
  std::vector<int> holder;
  std::vector<bool> copied;
  std::vector<Step> steps;
  std::vector<size_t> abandoned;
  bool overlapped = false;
  int nets_started = 0;
  int idles = 0;
  int fail_net_start = -1, fail_net_test = -1;
  int fail_after_idles = 1 << 30;
};

TEST(RunStaged, PutAndGetMoveEveryByteThroughReusedBounceBuffers) {
  std::mt19937_64 seeds(std::random_device{}());
  for (bool put : {true, false}) {
    for (size_t total : {size_t{1}, size_t{4095}, size_t{4097}, (size_t{3} << 16) + 5}) {
      for (int depth : {1, 2, 4, 8}) {
        FakeStaged f(put, total, 4096, depth, seeds());
        const std::vector<uint8_t> want = put ? f.local : f.remote;
        ASSERT_EQ(run_staged(total, 4096, depth, put, f), 0);
        EXPECT_EQ(put ? f.remote : f.local, want) << (put ? "put" : "get") << " of " << total;
        EXPECT_TRUE(f.abandoned.empty());
        for (int h : f.holder) EXPECT_EQ(h, -1) << "a bounce buffer still held at the end";
        for (const auto& s : f.steps) EXPECT_TRUE(s.done) << "a step left running";
      }
    }
  }
}

TEST(RunStaged, CopiesOverlapTheNetwork) {
  // Several chunks in flight: some chunk's copy runs while another chunk is on the network (the
  // synchronous copy per chunk this replaced never let that happen on one side).
  for (bool put : {true, false}) {
    FakeStaged f(put, size_t{64} << 12, 4096, 4, 42);
    ASSERT_EQ(run_staged(f.local.size(), 4096, 4, put, f), 0);
    EXPECT_TRUE(f.overlapped) << (put ? "put" : "get");
  }
}

TEST(RunStaged, AFailureStopsTheTransferAndAbandonsWhatStarted) {
  for (bool put : {true, false}) {
    {
      FakeStaged f(put, size_t{32} << 12, 4096, 4, 7);
      f.fail_net_test = 5;
      EXPECT_EQ(run_staged(f.local.size(), 4096, 4, put, f), 9);
      // No chunk starts after the failure; every chunk in flight is handed back.
      EXPECT_LE(f.nets_started, 5 + 4);
      EXPECT_FALSE(f.abandoned.empty());
      EXPECT_NE(std::find(f.abandoned.begin(), f.abandoned.end(), size_t{5}), f.abandoned.end());
    }
    {
      FakeStaged f(put, size_t{32} << 12, 4096, 4, 8);
      f.fail_net_start = 0;
      EXPECT_EQ(run_staged(f.local.size(), 4096, 4, put, f), 7);
      EXPECT_GE(f.nets_started, 1);
      EXPECT_LE(f.nets_started, 4);  // none after the failure
    }
    {
      // The time limit (idle's error) ends a transfer whose steps never finish.
      FakeStaged f(put, size_t{8} << 12, 4096, 2, 9);
      f.fail_after_idles = 50;
      // Steps that never finish: only idle() moves, until its error.
      struct Forever {
        FakeStaged& f;
        int start_copy(const ChunkPipeline::Chunk& c, uint64_t* t) { return f.start_copy(c, t); }
        int test_copy(uint64_t, bool* done) {
          *done = false;
          return 0;
        }
        int start_net(const ChunkPipeline::Chunk& c) { return f.start_net(c); }
        int test_net(const ChunkPipeline::Chunk&, bool* done) {
          *done = false;
          return 0;
        }
        int idle() { return f.idle(); }
        void abandon(const ChunkPipeline::Chunk& c, bool n) { f.abandon(c, n); }
      } forever{f};
      EXPECT_EQ(run_staged(f.local.size(), 4096, 2, put, forever), 11);
      EXPECT_EQ(f.abandoned.size(), 2u);
    }
  }
}

}  // namespace
}  // namespace vshmem
