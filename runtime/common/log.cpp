#include "runtime/common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "runtime/common/env.hpp"

namespace vshmem::log {
namespace {

int g_pe = -1;
// The text of this thread's most recent error message, for callers that turn a non-zero return
// into an exception of their own (the Python bindings).
thread_local std::string t_last_error;

Level level_named(const char* var, const char* v) {
  if (!strcasecmp(v, "error") || !strcmp(v, "0")) return Level::kError;
  if (!strcasecmp(v, "warn") || !strcmp(v, "1")) return Level::kWarn;
  if (!strcasecmp(v, "info") || !strcmp(v, "2")) return Level::kInfo;
  if (!strcasecmp(v, "trace") || !strcmp(v, "3")) return Level::kTrace;
  // NVSHMEM's own words: VERSION and ABORT have no level of their own here.
  if (!strcasecmp(v, "version")) return Level::kWarn;
  if (!strcasecmp(v, "abort")) return Level::kError;
  std::fprintf(stderr, "vshmem: %s='%s' is not one of error|warn|info|trace; using warn\n", var, v);
  return Level::kWarn;
}

// VSHMEM_DEBUG first, then OpenSHMEM's SHMEM_DEBUG (set at all: info), then NVSHMEM_DEBUG, so that
// a program written for NVSHMEM gets its messages without overriding ours.
Level parse_level() {
  if (auto v = env::get("VSHMEM_DEBUG")) return level_named("VSHMEM_DEBUG", v->c_str());
  if (env::is_set("SHMEM_DEBUG")) return Level::kInfo;
  if (auto v = env::get("NVSHMEM_DEBUG")) return level_named("NVSHMEM_DEBUG", v->c_str());
  return Level::kWarn;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kError: return "error";
    case Level::kWarn: return "warning";
    case Level::kInfo: return "info";
    case Level::kTrace: return "trace";
  }
  return "";
}

void emit(Level level, const char* fmt, va_list ap) {
  std::string text = vformat(fmt, ap);
  std::string line = g_pe >= 0 ? format("vshmem: PE %d: ", g_pe) : std::string("vshmem: ");
  if (level != Level::kError) line += std::string(level_name(level)) + ": ";
  line += text;
  if (line.empty() || line.back() != '\n') line += '\n';
  if (level == Level::kError) t_last_error.assign(line, 0, line.size() - 1);
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

Level threshold() {
  static const Level level = parse_level();
  return level;
}
bool enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(threshold()); }
void set_pe(int pe) { g_pe = pe; }
const std::string& last_error() { return t_last_error; }
void clear_last_error() { t_last_error.clear(); }
void set_last_error(const char* text) { t_last_error = text; }
int pe() { return g_pe; }

void message(Level level, const char* fmt, ...) {
  if (!enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  emit(level, fmt, ap);
  va_end(ap);
}

void fatal(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(Level::kError, fmt, ap);
  va_end(ap);
  std::abort();
}

std::string vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, ap);
  return out;
}

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

}  // namespace vshmem::log
