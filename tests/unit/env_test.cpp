#include "runtime/common/env.hpp"

#include <random>
#include <set>
#include <string_view>

#include "runtime/common/config.hpp"

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
  setenv("VSHMEM_HEAP_CHUNK_SIZE", "12q", 1);
  (void)config::load();
  auto r = size_var("VSHMEM_HEAP_CHUNK_SIZE", 7);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("VSHMEM_HEAP_CHUNK_SIZE: '12q' is not a size"),
            std::string::npos);
  unsetenv("VSHMEM_HEAP_CHUNK_SIZE");
  (void)config::load();
  EXPECT_EQ(size_var("VSHMEM_HEAP_CHUNK_SIZE", 7).value(), 7u);
}

TEST(Env, IntsAndBools) {
  EXPECT_EQ(parse_int("42", 0, 100).value(), 42);
  EXPECT_FALSE(parse_int("420", 0, 100).is_ok());
  EXPECT_FALSE(parse_int("4x", 0, 100).is_ok());
  EXPECT_TRUE(parse_bool("YES").value());
  EXPECT_FALSE(parse_bool("off").value());
  EXPECT_FALSE(parse_bool("maybe").is_ok());
}

// Sets a variable and reloads the table, as shmem_init does; unsets and reloads when destroyed.
struct SetVar {
  const char* name;
  SetVar(const char* n, const std::string& v) : name(n) {
    setenv(n, v.c_str(), 1);
    load_status = config::load();
  }
  ~SetVar() {
    unsetenv(name);
    (void)config::load();
  }
  Status load_status;
};

std::string random_digits(int n) {
  static std::mt19937 rng(std::random_device{}());
  std::string s = std::to_string(1 + rng() % 9);
  while (static_cast<int>(s.size()) < n) s += static_cast<char>('0' + rng() % 10);
  return s;
}

TEST(ConfigTable, EveryRowIsComplete) {
  std::set<std::string_view> names;
  for (const config::Var& v : config::kVars) {
    SCOPED_TRACE(v.name);
    EXPECT_TRUE(names.insert(v.name).second) << "twice in the table";
    EXPECT_GT(std::string_view(v.doc).size(), 8u);
    if (v.type == config::Type::kChoice) {
      ASSERT_NE(v.choices, nullptr);
      // A choice variable's documented default is one of its choices.
      if (*v.fallback != '\0') {
        const std::string all = std::string("|") + v.choices + "|";
        EXPECT_NE(all.find(std::string("|") + v.fallback + "|"), std::string::npos);
      }
    }
    if (v.type == config::Type::kInt) {
      EXPECT_LT(v.lo, v.hi);
    }
  }
}

TEST(ConfigTable, UnsetVariablesReadAsTheirDocumentedDefault) {
  unsetenv("VSHMEM_HEAP_CHUNK_SIZE");
  unsetenv("VSHMEM_BOOTSTRAP_TIMEOUT");
  unsetenv("VSHMEM_BACKEND");
  ASSERT_TRUE(config::load().is_ok());
  EXPECT_EQ(size_var("VSHMEM_HEAP_CHUNK_SIZE").value(), 32ull << 20);
  EXPECT_EQ(seconds_var("VSHMEM_BOOTSTRAP_TIMEOUT").value(), 120.0);
  EXPECT_EQ(text("VSHMEM_BACKEND"), "auto");
  EXPECT_FALSE(bool_var("VSHMEM_DISABLE_P2P").value());
}

TEST(ConfigTable, ValuesAreReadOnceUntilTheNextLoad) {
  const std::string digits = random_digits(6);
  SetVar chunk("VSHMEM_HEAP_CHUNK_SIZE", digits + "k");
  ASSERT_TRUE(chunk.load_status.is_ok()) << chunk.load_status.message();
  EXPECT_EQ(size_var("VSHMEM_HEAP_CHUNK_SIZE").value(), std::stoull(digits) * 1024);
  // A change after the load is not seen until the next load (shmem_init).
  setenv("VSHMEM_HEAP_CHUNK_SIZE", "1k", 1);
  EXPECT_EQ(size_var("VSHMEM_HEAP_CHUNK_SIZE").value(), std::stoull(digits) * 1024);
  ASSERT_TRUE(config::load().is_ok());
  EXPECT_EQ(size_var("VSHMEM_HEAP_CHUNK_SIZE").value(), 1024u);
}

// The load checks every variable by its type, and its error names the variable, the value and
// why; before the table, these were read (or ignored) only where and when they were used.
TEST(ConfigTable, LoadRejectsEveryKindOfMalformedValue) {
  const std::string junk = "x" + random_digits(4);
  const struct {
    const char* name;
    std::string value;
    const char* why;
  } cases[] = {
      {"VSHMEM_SYMMETRIC_SIZE", "12" + junk, "not a size"},
      {"VSHMEM_DEVICE", junk, "not an integer"},
      {"VSHMEM_DEVICE", "-" + random_digits(3), "outside"},
      {"VSHMEM_DISABLE_P2P", junk, "not a boolean"},
      {"VSHMEM_BOOTSTRAP_TIMEOUT", junk, "not a positive number of seconds"},
      {"VSHMEM_WAIT", junk, "is not one of auto|spin|yield"},
      {"VSHMEM_UCX_RMA", junk, "is not one of network|target"},
      {"VSHMEM_DEBUG", junk, "is not one of error|warn"},
      {"VSHMEM_DEVICE_SCOPE", junk, "is not one of auto|sys"},
      {"VSHMEM_DEBUG_DEVICE", junk, "not a boolean"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SetVar set(c.name, c.value);
    ASSERT_FALSE(set.load_status.is_ok());
    const std::string& m = set.load_status.message();
    EXPECT_EQ(m.find(c.name), 0u) << m;
    EXPECT_NE(m.find(c.value), std::string::npos) << m;
    EXPECT_NE(m.find(c.why), std::string::npos) << m;
  }
  ASSERT_TRUE(config::load().is_ok());
}

TEST(ConfigTable, ChoicesIgnoreCaseAndEmptyMeansUnset) {
  SetVar wait("VSHMEM_WAIT", "YIELD");
  EXPECT_TRUE(wait.load_status.is_ok()) << wait.load_status.message();
  SetVar empty("VSHMEM_HEAP_INITIAL", "");
  EXPECT_TRUE(empty.load_status.is_ok()) << empty.load_status.message();
  EXPECT_FALSE(get("VSHMEM_HEAP_INITIAL").has_value());
  EXPECT_TRUE(is_set("VSHMEM_HEAP_INITIAL"));
}

TEST(ConfigTable, DescribeShowsValueOrDefault) {
  const std::string digits = random_digits(5);
  SetVar set("VSHMEM_HEAP_INITIAL", digits);
  size_t initial = config::Name("VSHMEM_HEAP_INITIAL").index();
  EXPECT_EQ(config::describe(initial), "VSHMEM_HEAP_INITIAL='" + digits + "'");
  unsetenv("VSHMEM_HEAP_CHUNK_SIZE");
  ASSERT_TRUE(config::load().is_ok());
  EXPECT_EQ(config::describe(config::Name("VSHMEM_HEAP_CHUNK_SIZE").index()),
            "VSHMEM_HEAP_CHUNK_SIZE unset (default: 32M)");
}

}  // namespace
}  // namespace vshmem::env
