// Shared by the benchmark programs (host C++ and CUDA): options, timing statistics, progress
// lines and the JSON-lines records that bench/report.py turns into the table.
//
// Only PE 0 prints and writes records; every PE parses the same options so that the programs
// take the same branches everywhere (every benchmark is collective).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace vshmem::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wall-clock time, the same clock in every process of a node (start-up is compared across PEs).
inline double wall_now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Median of the samples; samples are few (repetitions), so a copy and a sort are fine.
inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The q-quantile (0 <= q <= 1) of the samples, interpolated between the two nearest ranks.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = lo + 1 < v.size() ? lo + 1 : lo;
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

inline std::string size_str(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) {
    snprintf(buf, sizeof(buf), "%llu GiB", (unsigned long long)(bytes >> 30));
  } else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) {
    snprintf(buf, sizeof(buf), "%llu MiB", (unsigned long long)(bytes >> 20));
  } else if (bytes >= 1024 && bytes % 1024 == 0) {
    snprintf(buf, sizeof(buf), "%llu KiB", (unsigned long long)(bytes >> 10));
  } else {
    snprintf(buf, sizeof(buf), "%llu B", (unsigned long long)bytes);
  }
  return buf;
}

// Parses "64M", "1G", "4096", "8k".
inline bool parse_size(const char* s, uint64_t* out) {
  char* end = nullptr;
  double v = strtod(s, &end);
  if (end == s || v < 0) return false;
  uint64_t mul = 1;
  switch (*end) {
    case 'k':
    case 'K':
      mul = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mul = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mul = 1ull << 30;
      ++end;
      break;
    default: break;
  }
  if (*end != '\0') return false;
  *out = (uint64_t)(v * (double)mul);
  return true;
}

struct Options {
  bool quick = false;
  std::string out;                // append JSON lines here; empty: stdout
  std::vector<std::string> only;  // benchmark groups to run; empty: all
  uint64_t max_bytes = 0;         // largest transfer; 0: the program's default
  std::vector<std::pair<std::string, std::string>> tags;  // extra fields in every record
  int reps = 0;  // timed repetitions (median taken); 0: default

  bool wants(const char* group) const {
    if (only.empty()) return true;
    return std::find(only.begin(), only.end(), group) != only.end();
  }
};

inline void usage_exit(const char* prog, const char* groups) {
  fprintf(stderr,
          "usage: %s [--quick] [--out FILE] [--only g1,g2] [--max-bytes SIZE] [--reps N]\n"
          "          [--tag key=value]...\n"
          "groups: %s\n",
          prog, groups);
  exit(2);
}

inline Options parse_options(int argc, char** argv, const char* groups) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_exit(argv[0], groups);
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--only") {
      std::string list = value();
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        if (comma > start) o.only.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (a == "--max-bytes") {
      if (!parse_size(value(), &o.max_bytes) || o.max_bytes == 0) usage_exit(argv[0], groups);
    } else if (a == "--reps") {
      o.reps = atoi(value());
      if (o.reps <= 0) usage_exit(argv[0], groups);
    } else if (a == "--tag") {
      std::string kv = value();
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage_exit(argv[0], groups);
      o.tags.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      usage_exit(argv[0], groups);
    }
  }
  return o;
}

// One measured figure. `ceiling` names the reference measured in the same run (empty: none).
struct Record {
  std::string bench;    // e.g. "put_bw"
  std::string variant;  // e.g. "block,nbi"
  uint64_t bytes = 0;   // transfer size; 0 where it does not apply
  double value = NAN;
  std::string unit;     // "us", "GB/s", "Mops/s", "ms"
  std::string ceiling;  // e.g. "cudaMemcpy_d2d"
  double ceiling_value = NAN;
  int iters = 0;
  int reps = 0;
};

class Reporter {
 public:
  Reporter(const Options& opt, std::string suite, std::string impl, int my_pe, int n_pes)
      : opt_(opt), suite_(std::move(suite)), impl_(std::move(impl)), me_(my_pe), npes_(n_pes) {
    if (me_ != 0) return;
    if (opt_.out.empty()) {
      f_ = stdout;
    } else {
      f_ = fopen(opt_.out.c_str(), "a");
      if (!f_) {
        fprintf(stderr, "bench: cannot open %s: %s\n", opt_.out.c_str(), strerror(errno));
        exit(1);
      }
    }
  }
  ~Reporter() {
    if (f_ && f_ != stdout) fclose(f_);
  }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  bool lead() const { return me_ == 0; }

  // Progress goes to stderr so that stdout stays machine-readable when --out is not given.
  void progress(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    if (me_ != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s/%s np=%d] ", suite_.c_str(), impl_.c_str(), npes_);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
  }

  void emit(const Record& r) const {
    if (me_ != 0) return;
    std::string s = "{";
    field(s, "suite", suite_);
    field(s, "impl", impl_);
    s += "\"npes\":" + std::to_string(npes_) + ",";
    field(s, "bench", r.bench);
    field(s, "variant", r.variant);
    s += "\"bytes\":" + std::to_string(r.bytes) + ",";
    num(s, "value", r.value);
    field(s, "unit", r.unit);
    if (!r.ceiling.empty() && std::isfinite(r.ceiling_value) && r.ceiling_value > 0) {
      field(s, "ceiling", r.ceiling);
      num(s, "ceiling_value", r.ceiling_value);
      num(s, "ratio", r.value / r.ceiling_value);
    }
    s += "\"iters\":" + std::to_string(r.iters) + ",\"reps\":" + std::to_string(r.reps);
    if (opt_.quick) s += ",\"quick\":true";
    for (auto& [k, v] : opt_.tags) {
      s += ",";
      field(s, k, v);
      s.pop_back();
    }
    s += "}\n";
    fputs(s.c_str(), f_);
    fflush(f_);
  }

 private:
  static void field(std::string& s, const std::string& k, const std::string& v) {
    s += "\"" + k + "\":\"";
    for (char c : v) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    s += "\",";
  }
  static void num(std::string& s, const char* k, double v) {
    char buf[64];
    if (std::isfinite(v)) {
      snprintf(buf, sizeof(buf), "\"%s\":%.6g,", k, v);
    } else {
      snprintf(buf, sizeof(buf), "\"%s\":null,", k);
    }
    s += buf;
  }

  const Options& opt_;
  std::string suite_, impl_;
  int me_, npes_;
  FILE* f_ = nullptr;
};

// Iterations for one timed repetition: enough bytes to swamp timer resolution and call overhead,
// bounded so that the largest sizes still finish quickly.
inline int iters_for(uint64_t bytes, uint64_t target_bytes, int lo, int hi) {
  uint64_t n = bytes ? target_bytes / bytes : (uint64_t)hi;
  return (int)std::clamp<uint64_t>(n, (uint64_t)lo, (uint64_t)hi);
}

}  // namespace vshmem::bench
