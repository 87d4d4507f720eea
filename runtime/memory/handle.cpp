#include <unistd.h>

#include <cstring>

#include "runtime/memory/memory.hpp"

namespace vshmem {

const char* handle_kind_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::kNone: return "none";
    case HandleKind::kPosixFd: return "posix_fd";
    case HandleKind::kFabric: return "fabric";
  }
  return "?";
}

ShareableHandle ShareableHandle::from_fd(int fd) {
  ShareableHandle h;
  h.kind_ = HandleKind::kPosixFd;
  h.fd_ = fd;
  return h;
}

ShareableHandle ShareableHandle::from_fabric(const void* bytes) {
  ShareableHandle h;
  h.kind_ = HandleKind::kFabric;
  std::memcpy(h.fabric_.data(), bytes, kFabricBytes);
  return h;
}

ShareableHandle::ShareableHandle(ShareableHandle&& other) noexcept
    : kind_(other.kind_), fd_(other.fd_), fabric_(other.fabric_) {
  other.kind_ = HandleKind::kNone;
  other.fd_ = -1;
}

ShareableHandle& ShareableHandle::operator=(ShareableHandle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    kind_ = other.kind_;
    fd_ = other.fd_;
    fabric_ = other.fabric_;
    other.kind_ = HandleKind::kNone;
    other.fd_ = -1;
  }
  return *this;
}

ShareableHandle::~ShareableHandle() {
  if (fd_ >= 0) ::close(fd_);
}

int ShareableHandle::release_fd() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

}  // namespace vshmem
