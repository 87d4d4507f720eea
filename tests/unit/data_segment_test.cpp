// The program's global and static variables (runtime/heap/data_segment.hpp): the segment found
// for this executable holds its initialized and zero-initialized globals and statics, and not
// the stack, malloc'ed memory, string literals or a shared library's variables.
#include "runtime/heap/data_segment.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

long g_initialized = 42;
long g_zero;
namespace {
int s_array[1000];
const char* const kLiteral = "read-only";
}  // namespace

TEST(DataSegment, HoldsGlobalsAndStatics) {
  auto seg = vshmem::DataSegment::find_own();
  ASSERT_TRUE(seg.is_ok()) << seg.status().message();
  const vshmem::DataSegment& s = *seg;
  EXPECT_GT(s.size, 0u);
  EXPECT_EQ(s.base % static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), 0u);
  static double function_static = 1.5;
  EXPECT_TRUE(s.contains(&g_initialized, sizeof(g_initialized)));
  EXPECT_TRUE(s.contains(&g_zero, sizeof(g_zero)));
  EXPECT_TRUE(s.contains(s_array, sizeof(s_array)));
  EXPECT_TRUE(s.contains(&function_static, sizeof(function_static)));
  EXPECT_EQ(s.offset_of(&g_zero), reinterpret_cast<uintptr_t>(&g_zero) - s.base);
}

TEST(DataSegment, ExcludesPrivateMemory) {
  auto seg = vshmem::DataSegment::find_own();
  ASSERT_TRUE(seg.is_ok());
  const vshmem::DataSegment& s = *seg;
  long on_stack = 0;
  auto on_heap = std::make_unique<long>(0);
  EXPECT_FALSE(s.contains(&on_stack, sizeof(on_stack)));
  EXPECT_FALSE(s.contains(on_heap.get(), sizeof(long)));
  EXPECT_FALSE(s.contains(kLiteral, 1));          // .rodata: not writable
  EXPECT_FALSE(s.contains(&errno, sizeof(int)));  // libc's (thread-local) variable
  // A range that starts inside and runs past the end, and one that wraps around.
  const auto* end = reinterpret_cast<const char*>(s.base + s.size);
  EXPECT_TRUE(s.contains(end - 8, 8));
  EXPECT_FALSE(s.contains(end - 8, 9));
  EXPECT_FALSE(s.contains(end - 8, SIZE_MAX));
}
