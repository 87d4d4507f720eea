// Reading the variables of the configuration table (config.hpp) and the parsers it uses. A
// malformed value is an error naming the variable, never a silent default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/config.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::env {

// Raw value, or nullopt when unset or empty.
std::optional<std::string> get(config::Name name);
// In the environment at all, even empty.
bool is_set(config::Name name);
// The value, or the table's default when unset.
std::string text(config::Name name);

// OpenSHMEM size syntax: a non-negative decimal number, optionally with a fraction, followed by
// an optional k/K, m/M, g/G, t/T suffix (powers of 1024). "1.5G" = 1610612736. Whole bytes only.
Result<uint64_t> parse_size(const std::string& text);
// Integer in [lo, hi].
Result<long long> parse_int(const std::string& text, long long lo, long long hi);
// 1/0, yes/no, true/false, on/off (case-insensitive).
Result<bool> parse_bool(const std::string& text);

// The parsed value: `fallback` when unset, an error naming the variable when malformed. The
// one-argument forms fall back on the table's default.
Result<uint64_t> size_var(config::Name name, uint64_t fallback);
Result<uint64_t> size_var(config::Name name);
Result<long long> int_var(config::Name name, long long fallback, long long lo, long long hi);
Result<bool> bool_var(config::Name name, bool fallback);
Result<bool> bool_var(config::Name name);
Result<double> seconds_var(config::Name name);

}  // namespace vshmem::env
