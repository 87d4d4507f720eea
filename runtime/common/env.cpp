#include "runtime/common/env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "runtime/common/log.hpp"

namespace vshmem::env {

std::optional<std::string> get(config::Name name) {
  const config::Value& v = config::value(name);
  if (!v.present()) return std::nullopt;
  return v.text;
}

bool is_set(config::Name name) { return config::value(name).exists; }

std::string text(config::Name name) {
  const config::Value& v = config::value(name);
  return v.present() ? v.text : std::string(name.var().fallback);
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

Result<uint64_t> size_var(config::Name name, uint64_t fallback) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  return v.present() ? v.size : fallback;
}

Result<uint64_t> size_var(config::Name name) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  return v.size;
}

Result<long long> int_var(config::Name name, long long fallback, long long lo, long long hi) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  if (!v.present()) return fallback;
  if (v.integer < lo || v.integer > hi) {
    return error(Code::kInvalidArgument,
                 log::format("%s: %lld is outside [%lld, %lld]", name.str(), v.integer, lo, hi));
  }
  return v.integer;
}

Result<bool> bool_var(config::Name name, bool fallback) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  return v.present() ? v.flag : fallback;
}

Result<bool> bool_var(config::Name name) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  return v.flag;
}

Result<double> seconds_var(config::Name name) {
  const config::Value& v = config::value(name);
  if (!v.status.is_ok()) return v.status;
  return v.seconds;
}

}  // namespace vshmem::env
