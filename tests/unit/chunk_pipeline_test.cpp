// The schedule of the remote path's staged transfers (runtime/transport/chunk_pipeline.hpp):
// every byte is covered exactly once, in order; never more than `depth` chunks in flight; a
// bounce buffer is never held by two chunks at once; completions in any order.
#include "runtime/transport/chunk_pipeline.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vshmem
