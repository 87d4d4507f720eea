#include "runtime/common/env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "runtime/common/log.hpp"

namespace vshmem::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

Result<uint64_t> parse_size(const std::string& text) {
  const auto bad = [&](const char* why) {
    return error(Code::kInvalidArgument, log::format("'%s' is not a size (%s); expected e.g. "
                                                     "1048576, 512k, 1.5G, 2T",
                                                     text.c_str(), why));
  };
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  size_t digits_start = i;
  long double whole = 0;
  bool any_digit = false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    whole = whole * 10 + (text[i] - '0');
    ++i;
    any_digit = true;
  }
  long double frac = 0, scale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      scale /= 10;
      frac += (text[i] - '0') * scale;
      ++i;
      any_digit = true;
    }
  }
  if (!any_digit || digits_start == text.size()) return bad("no digits");
  long double mult = 1;
  if (i < text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K': mult = 1024.0L; break;
      case 'm':
      case 'M': mult = 1024.0L * 1024; break;
      case 'g':
      case 'G': mult = 1024.0L * 1024 * 1024; break;
      case 't':
      case 'T': mult = 1024.0L * 1024 * 1024 * 1024; break;
      default: return bad("unknown suffix");
    }
    ++i;
    if (i < text.size() && (text[i] == 'b' || text[i] == 'B')) ++i;  // tolerate "MB"
  }
  while (i < text.size() && text[i] == ' ') ++i;
  if (i != text.size()) return bad("trailing characters");
  long double bytes = (whole + frac) * mult;
  if (bytes > 1.8e19L) return bad("too large");
  return static_cast<uint64_t>(std::floor(bytes));
}

Result<long long> parse_int(const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str() || *end != '\0') {
    return error(Code::kInvalidArgument, log::format("'%s' is not an integer", text.c_str()));
  }
  if (v < lo || v > hi) {
    return error(Code::kInvalidArgument, log::format("%lld is outside [%lld, %lld]", v, lo, hi));
  }
  return v;
}

Result<bool> parse_bool(const std::string& text) {
  const char* t = text.c_str();
  if (!strcasecmp(t, "1") || !strcasecmp(t, "yes") || !strcasecmp(t, "true") ||
      !strcasecmp(t, "on") || !strcasecmp(t, "y")) {
    return true;
  }
  if (!strcasecmp(t, "0") || !strcasecmp(t, "no") || !strcasecmp(t, "false") ||
      !strcasecmp(t, "off") || !strcasecmp(t, "n")) {
    return false;
  }
  return error(Code::kInvalidArgument,
               log::format("'%s' is not a boolean (1/0, yes/no, true/false, on/off)", t));
}

Result<uint64_t> size_var(const char* name, uint64_t fallback) {
  auto v = get(name);
  if (!v) return fallback;
  auto r = parse_size(*v);
  if (!r) return r.status().with_context(std::string(name) + ": ");
  return r;
}

Result<long long> int_var(const char* name, long long fallback, long long lo, long long hi) {
  auto v = get(name);
  if (!v) return fallback;
  auto r = parse_int(*v, lo, hi);
  if (!r) return r.status().with_context(std::string(name) + ": ");
  return r;
}

Result<bool> bool_var(const char* name, bool fallback) {
  auto v = get(name);
  if (!v) return fallback;
  auto r = parse_bool(*v);
  if (!r) return r.status().with_context(std::string(name) + ": ");
  return r;
}

}  // namespace vshmem::env
