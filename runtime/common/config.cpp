#include "runtime/common/config.hpp"

#include <strings.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "runtime/common/env.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::config {
namespace {

std::mutex g_mutex;
std::vector<Value> g_values;  // kVarCount entries once loaded
Status g_load_status;

bool one_of(const std::string& text, const char* choices) {
  const std::string_view all(choices);
  size_t start = 0;
  while (start <= all.size()) {
    size_t bar = all.find('|', start);
    if (bar == std::string_view::npos) bar = all.size();
    const std::string option(all.substr(start, bar - start));
    if (strcasecmp(option.c_str(), text.c_str()) == 0) return true;
    start = bar + 1;
  }
  return false;
}

Result<double> parse_seconds(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  // A week is far beyond any sane wait; the bound keeps the arithmetic finite.
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > 7 * 24 * 3600.0) {
    return error(Code::kInvalidArgument,
                 log::format("'%s' is not a positive number of seconds (expected e.g. 120 or 2.5, "
                             "at most 604800)",
                             text.c_str()));
  }
  return seconds;
}

// Parses `text` as `var` says into `out`; the error says why, without the name (added above).
Status parse_into(const Var& var, const std::string& text, Value* out) {
  switch (var.type) {
    case Type::kSize: {
      VSHMEM_ASSIGN_OR_RETURN(out->size, env::parse_size(text));
      return Status::ok();
    }
    case Type::kInt: {
      VSHMEM_ASSIGN_OR_RETURN(out->integer, env::parse_int(text, var.lo, var.hi));
      return Status::ok();
    }
    case Type::kBool: {
      VSHMEM_ASSIGN_OR_RETURN(out->flag, env::parse_bool(text));
      return Status::ok();
    }
    case Type::kSeconds: {
      VSHMEM_ASSIGN_OR_RETURN(out->seconds, parse_seconds(text));
      return Status::ok();
    }
    case Type::kChoice:
      if (one_of(text, var.choices)) return Status::ok();
      return error(Code::kInvalidArgument,
                   log::format("'%s' is not one of %s", text.c_str(), var.choices));
    case Type::kText:
    case Type::kForeign: return Status::ok();
  }
  return Status::ok();
}

Value read_one(const Var& var) {
  Value v;
  const char* raw = std::getenv(var.name);  // the one getenv of the runtime
  v.exists = raw != nullptr;
  if (raw != nullptr) v.text = raw;
  // Typed defaults ("32M", "0", "120") are parsed too, so that an unset variable reads as its
  // documented default; descriptive defaults ("on in debug builds") leave the zero value.
  if (*var.fallback != '\0') {
    Value dflt;
    if (parse_into(var, var.fallback, &dflt).is_ok()) {
      v.size = dflt.size;
      v.integer = dflt.integer;
      v.flag = dflt.flag;
      v.seconds = dflt.seconds;
    }
  }
  if (!v.present()) return v;
  Status s = parse_into(var, v.text, &v);
  if (!s.is_ok()) {
    // The forms the messages had before the table: "VSHMEM_WAIT='often' is not one of ..." for
    // choices and times, "SHMEM_SYMMETRIC_SIZE: '12q' is not a size ..." for the others.
    const bool inline_value = var.type == Type::kChoice || var.type == Type::kSeconds;
    v.status = error(Code::kInvalidArgument,
                     std::string(var.name) + (inline_value ? "=" : ": ") + s.message());
  }
  return v;
}

void load_locked() {
  std::vector<Value> values;
  values.reserve(kVarCount);
  Status first;
  for (const Var& var : kVars) {
    values.push_back(read_one(var));
    if (first.is_ok() && !values.back().status.is_ok()) first = values.back().status;
  }
  g_values = std::move(values);
  g_load_status = first;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kSize: return "size";
    case Type::kInt: return "integer";
    case Type::kBool: return "boolean";
    case Type::kSeconds: return "seconds";
    case Type::kChoice: return "choice";
    case Type::kText:
    case Type::kForeign: return "text";
  }
  return "";
}

}  // namespace

Status load() {
  std::lock_guard<std::mutex> lock(g_mutex);
  load_locked();
  return g_load_status;
}

const Value& value_at(size_t index) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_values.empty()) load_locked();
  return g_values[index];
}

const Value& value(Name name) { return value_at(name.index()); }

std::string describe(size_t index) {
  const Var& var = kVars[index];
  const Value& v = value_at(index);
  std::string line = var.name;
  if (v.exists && std::string_view(var.name) == "VSHMEM_JOB_SECRET") {
    line += " set (not shown)";
  } else if (v.exists) {
    line += "='" + v.text + "'";
    if (!v.status.is_ok()) line += " (malformed)";
  } else if (*var.fallback != '\0') {
    line += std::string(" unset (default: ") + var.fallback + ")";
  } else {
    line += " unset";
  }
  return line;
}

std::string markdown_table() {
  std::string out = "| variable | type | default | meaning |\n|---|---|---|---|\n";
  for (const Var& var : kVars) {
    std::string type = type_name(var.type);
    if (var.type == Type::kChoice) {
      type = std::string("`") + var.choices + "`";
      for (size_t i = 0; (i = type.find('|', i)) != std::string::npos; i += 2) {
        type.replace(i, 1, "\\|");
      }
    }
    if (var.type == Type::kForeign) type = "other program's";
    const std::string fallback = *var.fallback == '\0' ? ""
                                 : var.type == Type::kChoice || var.type == Type::kSize ||
                                         var.type == Type::kBool || var.type == Type::kSeconds
                                     ? (std::string(var.fallback).find(' ') == std::string::npos
                                            ? std::string("`") + var.fallback + "`"
                                            : std::string(var.fallback))
                                     : std::string(var.fallback);
    std::string doc = var.doc;
    if (var.internal) doc += " (set by vshmemrun for its PEs; not for users)";
    out += std::string("| `") + var.name + "` | " + type + " | " + fallback + " | " + doc + " |\n";
  }
  return out;
}

}  // namespace vshmem::config
