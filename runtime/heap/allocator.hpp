// The deterministic allocator behind shmem_malloc & co. It manages offsets in [0, capacity) of
// the symmetric heap; only [0, committed) is backed by memory. Given the same sequence of calls
// it returns the same offsets on every PE, which is what makes the heap symmetric.
// Alignment is of the absolute address origin + offset (origin: the heap's base, the same on
// every PE), so shmem_align honours alignments larger than the alignment of the heap's base.
// Best fit by (size, offset) with coalescing on free: O(log n) per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace vshmem {

class Allocator {
 public:
  static constexpr size_t kMinAlignment = 64;  // a cache line: no false sharing between objects

  // origin: the address of offset 0, a multiple of kMinAlignment.
  explicit Allocator(size_t capacity, uintptr_t origin = 0)
      : capacity_(capacity), origin_(origin) {}

  size_t capacity() const { return capacity_; }
  size_t committed() const { return committed_; }

  // Offset of a free block of `size` bytes whose address (origin + offset) is aligned to
  // `alignment` (a power of two), or nullopt
  // when the committed region has no room (see growth_needed).
  std::optional<size_t> allocate(size_t size, size_t alignment);
  // How many bytes the committed region must grow by so that allocate(size, alignment) succeeds;
  // 0 when it already would; nullopt when even the whole capacity would not be enough.
  std::optional<size_t> growth_needed(size_t size, size_t alignment) const;
  // Adds [committed, committed + bytes) to the free space.
  void grow(size_t bytes);
  // Moves the committed end by `bytes` without adding free space: the range is backed by
  // memory the allocator never hands out (a registered application buffer).
  void skip(size_t bytes) { committed_ += bytes; }

  // Frees the block at offset; false when offset is not the start of a live block.
  bool free(size_t offset);
  // Size of the live block at offset, or nullopt.
  std::optional<size_t> block_size(size_t offset) const;
  // The live block that contains offset: (start, size), or nullopt.
  std::optional<std::pair<size_t, size_t>> find_block(size_t offset) const;

  size_t bytes_in_use() const { return in_use_; }
  size_t free_blocks() const { return free_by_offset_.size(); }

 private:
  void insert_free(size_t offset, size_t size);
  void erase_free(std::map<size_t, size_t>::iterator it);
  static size_t padded(size_t size, size_t alignment) {
    return size + (alignment > kMinAlignment ? alignment - kMinAlignment : 0);
  }

  size_t capacity_;
  uintptr_t origin_;
  size_t committed_ = 0;
  size_t in_use_ = 0;
  std::map<size_t, size_t> free_by_offset_;           // offset -> size
  std::set<std::pair<size_t, size_t>> free_by_size_;  // (size, offset)
  std::map<size_t, size_t> live_;                     // offset -> size (rounded)
};

}  // namespace vshmem
