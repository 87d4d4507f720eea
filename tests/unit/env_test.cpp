#include "runtime/common/env.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace vshmem::env {
namespace {

TEST(Env, SizesWithSuffixesAndDecimals) {
  EXPECT_EQ(parse_size("4096").value(), 4096u);
  EXPECT_EQ(parse_size("512k").value(), 512u * 1024);
  EXPECT_EQ(parse_size("512K").value(), 512u * 1024);
  EXPECT_EQ(parse_size("2m").value(), 2u << 20);
  EXPECT_EQ(parse_size("1.5G").value(), 1610612736u);
  EXPECT_EQ(parse_size("0.5k").value(), 512u);
  EXPECT_EQ(parse_size("1T").value(), 1ull << 40);
  EXPECT_EQ(parse_size("64MB").value(), 64ull << 20);
}

TEST(Env, BadSizesAreErrors) {
  for (const char* bad : {"", "abc", "12x", "-5", "1.5.5G", "G", "1e9", "12 34"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
    if (!r.is_ok()) EXPECT_NE(r.status().message().find("not a size"), std::string::npos);
  }
}

TEST(Env, VariablesNameThemselvesInErrors) {
  setenv("VSHMEM_TEST_SIZE", "12q", 1);
  auto r = size_var("VSHMEM_TEST_SIZE", 7);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("VSHMEM_TEST_SIZE"), std::string::npos);
  unsetenv("VSHMEM_TEST_SIZE");
  EXPECT_EQ(size_var("VSHMEM_TEST_SIZE", 7).value(), 7u);
}

TEST(Env, IntsAndBools) {
  EXPECT_EQ(parse_int("42", 0, 100).value(), 42);
  EXPECT_FALSE(parse_int("420", 0, 100).is_ok());
  EXPECT_FALSE(parse_int("4x", 0, 100).is_ok());
  EXPECT_TRUE(parse_bool("YES").value());
  EXPECT_FALSE(parse_bool("off").value());
  EXPECT_FALSE(parse_bool("maybe").is_ok());
}

}  // namespace
}  // namespace vshmem::env
