// Status and Result: the error currency of every internal layer.
// Output parameters are written only on success; exceptions never cross the C API.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace vshmem {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // bad input from the caller
  kOutOfMemory,      // budget or physical memory exhausted
  kUnsupported,      // capability absent on this machine
  kTimeout,          // a peer did not arrive in time
  kPeerFailure,      // a peer died or sent garbage
  kSystem,           // an OS or driver call failed
  kState,            // called before init / after finalize / twice
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefix context ("shmem_malloc(4096): ") to a lower layer's cause.
  Status with_context(const std::string& prefix) const {
    if (is_ok()) return *this;
    return Status(code_, prefix + message_);
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status error(Code code, std::string message) { return Status(code, std::move(message)); }

// expected-style result: either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  T& operator*() { return std::get<0>(v_); }
  Status status() const { return is_ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace vshmem

#define VSHMEM_RETURN_IF_ERROR(expr) \
  do {                               \
    ::vshmem::Status _st = (expr);   \
    if (!_st.is_ok()) return _st;    \
  } while (0)

#define VSHMEM_CONCAT_INNER(a, b) a##b
#define VSHMEM_CONCAT(a, b) VSHMEM_CONCAT_INNER(a, b)
#define VSHMEM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
#define VSHMEM_ASSIGN_OR_RETURN(lhs, expr) \
  VSHMEM_ASSIGN_OR_RETURN_IMPL(VSHMEM_CONCAT(_res_, __LINE__), lhs, expr)
