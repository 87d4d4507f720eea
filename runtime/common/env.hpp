// Parsing of VSHMEM_* / SHMEM_* environment variables. A malformed value is an error naming the
// variable, never a silent default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/status.hpp"

namespace vshmem::env {

// Raw value, or nullopt when unset or empty.
std::optional<std::string> get(const char* name);

// OpenSHMEM size syntax: a non-negative decimal number, optionally with a fraction, followed by
// an optional k/K, m/M, g/G, t/T suffix (powers of 1024). "1.5G" = 1610612736. Whole bytes only.
Result<uint64_t> parse_size(const std::string& text);
// Integer in [lo, hi].
Result<long long> parse_int(const std::string& text, long long lo, long long hi);
// 1/0, yes/no, true/false, on/off (case-insensitive).
Result<bool> parse_bool(const std::string& text);

// Read-and-parse helpers: the variable's default when unset, an error naming it when malformed.
Result<uint64_t> size_var(const char* name, uint64_t fallback);
Result<long long> int_var(const char* name, long long fallback, long long lo, long long hi);
Result<bool> bool_var(const char* name, bool fallback);

}  // namespace vshmem::env
