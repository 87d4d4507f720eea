// Logging at VSHMEM_DEBUG / SHMEM_DEBUG levels; every line names the PE.
#pragma once

#include <cstdarg>
#include <string>

namespace vshmem::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// Read once from VSHMEM_DEBUG (error|warn|info|trace, or 0-3) or SHMEM_DEBUG (any value = info).
Level threshold();
bool enabled(Level level);
// The PE shown in messages; -1 until the bootstrap knows it.
void set_pe(int pe);
int pe();
// This thread's most recent error message (as printed, without the newline), or "".
const std::string& last_error();
void clear_last_error();
void set_last_error(const char* text);

void message(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Prints "vshmem: PE n: <text>" on stderr and aborts the whole job (shmem_global_exit semantics
// are the api layer's job; this is the last resort for fatal internal errors).
[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vformat(const char* fmt, va_list ap);

}  // namespace vshmem::log

#define VSHMEM_INFO(...)                                                \
  do {                                                                  \
    if (::vshmem::log::enabled(::vshmem::log::Level::kInfo))            \
      ::vshmem::log::message(::vshmem::log::Level::kInfo, __VA_ARGS__); \
  } while (0)
#define VSHMEM_WARN(...) ::vshmem::log::message(::vshmem::log::Level::kWarn, __VA_ARGS__)
#define VSHMEM_TRACE(...)                                                \
  do {                                                                   \
    if (::vshmem::log::enabled(::vshmem::log::Level::kTrace))            \
      ::vshmem::log::message(::vshmem::log::Level::kTrace, __VA_ARGS__); \
  } while (0)
