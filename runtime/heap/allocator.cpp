#include "runtime/heap/allocator.hpp"

namespace vshmem {
namespace {
size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
}  // namespace

void Allocator::insert_free(size_t offset, size_t size) {
  if (size == 0) return;
  // Coalesce with the neighbours.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && offset + size == next->first) {
    size += next->second;
    erase_free(next);
  }
  auto it = free_by_offset_.lower_bound(offset);
  if (it != free_by_offset_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      erase_free(prev);
    }
  }
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Allocator::erase_free(std::map<size_t, size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

std::optional<size_t> Allocator::allocate(size_t size, size_t alignment) {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  if (alignment < kMinAlignment) alignment = kMinAlignment;
  if (size > capacity_) return std::nullopt;
  size = round_up(size, kMinAlignment);
  // The smallest block that fits even in the worst alignment case; ties go to the lowest offset.
  auto it = free_by_size_.lower_bound({padded(size, alignment), 0});
  if (it == free_by_size_.end()) return std::nullopt;
  size_t block_off = it->second, block_size = it->first;
  size_t start = round_up(origin_ + block_off, alignment) - origin_;
  erase_free(free_by_offset_.find(block_off));
  insert_free(block_off, start - block_off);
  insert_free(start + size, block_off + block_size - (start + size));
  live_.emplace(start, size);
  in_use_ += size;
  return start;
}

std::optional<size_t> Allocator::growth_needed(size_t size, size_t alignment) const {
  if (alignment < kMinAlignment) alignment = kMinAlignment;
  size = round_up(size, kMinAlignment);
  size_t want = padded(size, alignment);
  auto it = free_by_size_.lower_bound({want, 0});
  if (it != free_by_size_.end()) return 0;
  // The free block at the end of the committed region (if any) extends into the growth.
  size_t tail = 0;
  if (!free_by_offset_.empty()) {
    auto last = std::prev(free_by_offset_.end());
    if (last->first + last->second == committed_) tail = last->second;
  }
  size_t need = want - tail;
  if (committed_ + need > capacity_) return std::nullopt;
  return need;
}

void Allocator::grow(size_t bytes) {
  size_t at = committed_;
  committed_ += bytes;
  insert_free(at, bytes);
}

bool Allocator::free(size_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  in_use_ -= it->second;
  insert_free(it->first, it->second);
  live_.erase(it);
  return true;
}

std::optional<size_t> Allocator::block_size(size_t offset) const {
  auto it = live_.find(offset);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<size_t, size_t>> Allocator::find_block(size_t offset) const {
  auto it = live_.upper_bound(offset);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (offset >= it->first + it->second) return std::nullopt;
  return *it;
}

}  // namespace vshmem
