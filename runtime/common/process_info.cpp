#include "runtime/common/process_info.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/common/log.hpp"

namespace vshmem {
namespace {

// Field `field` (1-based, >= 3) of /proc/<pid>/stat into `buf`: a pointer to its text, or null.
const char* stat_field_text(pid_t pid, int field, char (&buf)[1024]) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return nullptr;
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return nullptr;
  int at = 2;
  for (; *p != 0 && at < field; ++p) {
    if (*p == ' ') ++at;
  }
  return *p != 0 ? p : nullptr;
}

// Field `field` (1-based, >= 3) of /proc/<pid>/stat as a number, or 0.
unsigned long long stat_field(pid_t pid, int field) {
  char buf[1024];
  const char* text = stat_field_text(pid, field, buf);
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 0;
}

}  // namespace

uint64_t process_start_time(pid_t pid) { return stat_field(pid, 22); }

char process_state(pid_t pid) {
  if (pid <= 0) return '\0';
  char buf[1024];
  const char* text = stat_field_text(pid, 3, buf);
  return text != nullptr ? *text : '\0';
}

pid_t process_parent(pid_t pid) {
  if (pid <= 0) return -1;
  unsigned long long pp = stat_field(pid, 4);
  return pp == 0 && pid != 1 ? -1 : static_cast<pid_t>(pp);
}

bool is_our_ancestor(pid_t pid) {
  if (pid <= 1) return false;
  pid_t p = ::getppid();
  for (int depth = 0; depth < 64 && p > 1; ++depth) {
    if (p == pid) return true;
    p = process_parent(p);
  }
  return false;
}

Result<std::string> random_hex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return error(Code::kSystem, log::format("getrandom(): %s", strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}

}  // namespace vshmem
