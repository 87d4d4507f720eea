#include "runtime/common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace vshmem::log {
namespace {

int g_pe = -1;

Level parse_level() {
  const char* v = std::getenv("VSHMEM_DEBUG");
  if (v == nullptr || *v == '\0') {
    return std::getenv("SHMEM_DEBUG") != nullptr ? Level::kInfo : Level::kWarn;
  }
  if (!strcasecmp(v, "error") || !strcmp(v, "0")) return Level::kError;
  if (!strcasecmp(v, "warn") || !strcmp(v, "1")) return Level::kWarn;
  if (!strcasecmp(v, "info") || !strcmp(v, "2")) return Level::kInfo;
  if (!strcasecmp(v, "trace") || !strcmp(v, "3")) return Level::kTrace;
  std::fprintf(stderr,
               "vshmem: VSHMEM_DEBUG='%s' is not one of error|warn|info|trace; using warn\n", v);
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
