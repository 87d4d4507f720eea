#include "runtime/heap/allocator.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace vshmem {
namespace {

TEST(Allocator, GrowsOnlyWhenNeeded) {
  Allocator a(1 << 20);
  EXPECT_EQ(a.growth_needed(100, 64).value(), 128u);
  a.grow(4096);
  EXPECT_EQ(a.growth_needed(100, 64).value(), 0u);
  auto off = a.allocate(100, 64);
  ASSERT_TRUE(off);
  EXPECT_EQ(*off % 64, 0u);
  // The free tail of the committed region counts toward the next growth.
  size_t need = a.growth_needed(8192, 64).value();
  EXPECT_LT(need, 8192u);
  EXPECT_FALSE(a.growth_needed(2 << 20, 64).has_value());  // beyond capacity
}

TEST(Allocator, AlignmentHonoured) {
  Allocator a(1 << 24);
  a.grow(1 << 24);
  for (size_t align : {64u, 128u, 4096u, 65536u, 1u << 20}) {
    auto off = a.allocate(1000, align);
    ASSERT_TRUE(off) << align;
    EXPECT_EQ(*off % align, 0u) << align;
  }
  EXPECT_FALSE(a.allocate(10, 48));  // not a power of two
  EXPECT_FALSE(a.allocate(0, 64));
}

// The heap's base is only granularity-aligned (2 MiB): alignments above it are of the address,
// not of the offset from the base.
TEST(Allocator, AlignsAddressesNotOffsets) {
  const uintptr_t origin = 0x7f1234600000ull;  // 2 MiB-aligned, not 4 MiB-aligned
  const size_t capacity = 4ull << 30;
  Allocator a(capacity, origin);
  a.grow(capacity);
  auto first = a.allocate(100, 64);  // so that offset 0 is taken, as in the real heap
  ASSERT_TRUE(first);
  for (size_t align = 1; align <= (1ull << 30); align <<= 1) {
    auto off = a.allocate(24, align);
    ASSERT_TRUE(off) << align;
    EXPECT_EQ((origin + *off) % align, 0u) << "alignment " << align;
    // growth_needed's worst case holds: the block fits in the committed region.
    EXPECT_LE(*off + 24, capacity);
    EXPECT_TRUE(a.free(*off));
  }
  EXPECT_TRUE(a.free(*first));
  EXPECT_EQ(a.free_blocks(), 1u);
}

TEST(Allocator, FreeCoalescesAndReuses) {
  Allocator a(1 << 20);
  a.grow(1 << 20);
  auto x = a.allocate(1000, 64), y = a.allocate(1000, 64), z = a.allocate(1000, 64);
  ASSERT_TRUE(x && y && z);
  EXPECT_TRUE(a.free(*y));
  EXPECT_FALSE(a.free(*y));      // double free is refused
  EXPECT_FALSE(a.free(*x + 8));  // not the start of a block
  auto w = a.allocate(900, 64);  // best fit: the hole left by y
  EXPECT_EQ(*w, *y);
  EXPECT_TRUE(a.free(*x));
  EXPECT_TRUE(a.free(*w));
  EXPECT_TRUE(a.free(*z));
  EXPECT_EQ(a.free_blocks(), 1u);  // everything coalesced back
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(*a.allocate(1 << 20, 64), 0u);
}

TEST(Allocator, DeterministicAndNonOverlappingUnderRandomWorkload) {
  std::random_device rd;
  unsigned seed = rd();
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Two allocators fed the same sequence must return the same offsets (symmetry).
  Allocator a(64 << 20), b(64 << 20);
  std::mt19937_64 rng(seed);
  std::map<size_t, size_t> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      size_t size = 1 + rng() % 70000;
      size_t align = size_t{64} << (rng() % 8);
      auto need = a.growth_needed(size, align);
      ASSERT_EQ(need, b.growth_needed(size, align));
      if (!need) continue;
      if (*need) {
        a.grow(*need);
        b.grow(*need);
      }
      auto oa = a.allocate(size, align), ob = b.allocate(size, align);
      ASSERT_TRUE(oa);
      ASSERT_EQ(oa, ob);
      ASSERT_EQ(*oa % align, 0u);
      ASSERT_LE(*oa + size, a.committed());
      auto next = live.lower_bound(*oa);
      if (next != live.end()) ASSERT_LE(*oa + size, next->first);
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *oa);
      }
      live[*oa] = size;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(a.free(it->first));
      ASSERT_TRUE(b.free(it->first));
      live.erase(it);
    }
  }
}

}  // namespace
}  // namespace vshmem
