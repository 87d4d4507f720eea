#include "runtime/heap/symmetric_heap.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/common/log.hpp"
#include "runtime/heap/va_agreement.hpp"

namespace vshmem {
namespace {

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The handle kind every PE of the heap can export and import: fabric where all have it, else
// POSIX FD. Decided collectively so that exporters and importers agree.
Result<HandleKind> agree_handle_kind(MemoryProvider& provider, Bootstrap& bootstrap) {
  uint32_t mask = 0;
  for (HandleKind k : provider.handle_kinds()) mask |= 1u << static_cast<int>(k);
  std::vector<uint32_t> all(bootstrap.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&mask, all.data(), sizeof(mask)));
  uint32_t common = ~0u;
  for (uint32_t m : all) common &= m;
  for (HandleKind k : provider.handle_kinds()) {
    if (common & (1u << static_cast<int>(k))) return k;
  }
  return HandleKind::kNone;
}

}  // namespace

Result<std::unique_ptr<SymmetricHeap>> SymmetricHeap::create(
    MemoryProvider& provider, Bootstrap& bootstrap, const Topology& topology,
    std::vector<bool> mapped, FdExchange* fd_exchange, const HeapConfig& config) {
  const int n = bootstrap.size();
  const int me = bootstrap.rank();
  const size_t gran = provider.granularity();
  HeapConfig cfg = config;
  cfg.size = round_up(std::max<size_t>(cfg.size, gran), gran);
  cfg.chunk_size = round_up(std::max<size_t>(cfg.chunk_size, gran), gran);

  // The window has one slot per PE of our mapping domain (the PEs we map and ourselves), in PE
  // order: on one node that is the node's PEs; across the nodes of an NVLink domain, the domain's.
  // Our own slot stays unmapped (we address our memory at H only).
  std::vector<int32_t> slots(n, -1);
  std::vector<int> mapped_peers;
  bool cross_node = false;
  int32_t domain_size = 0;
  for (int p = 0; p < n; ++p) {
    if (p == me || mapped[p]) {
      if (p != me) {
        slots[p] = domain_size;
        mapped_peers.push_back(p);
        cross_node |= topology.node_of_pe[p] != topology.my_node;
      }
      ++domain_size;
    }
  }
  HandleKind kind = HandleKind::kNone;
  VSHMEM_ASSIGN_OR_RETURN(kind, agree_handle_kind(provider, bootstrap));
  if (kind == HandleKind::kNone && !mapped_peers.empty()) {
    return error(Code::kUnsupported,
                 log::format("the %s memory provider has no handle type every PE can share",
                             provider.name()));
  }
  if (cross_node && kind != HandleKind::kFabric) {
    for (int p : mapped_peers) {
      if (topology.node_of_pe[p] != topology.my_node) {
        return error(Code::kInvalidArgument,
                     log::format("PE %d is on another node: mapping it needs fabric handles on "
                                 "every PE, and the PEs share %s handles only",
                                 p, handle_kind_name(kind)));
      }
    }
  }
  if (!mapped_peers.empty() && kind != HandleKind::kFabric && fd_exchange == nullptr) {
    return error(Code::kState, "peers to map but no handle exchange");
  }

  // The range: H plus as many window slots as the largest mapping domain (same on every PE).
  std::vector<int32_t> domain_sizes(n);
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(&domain_size, domain_sizes.data(), sizeof(int32_t)));
  size_t slots_total =
      static_cast<size_t>(*std::max_element(domain_sizes.begin(), domain_sizes.end()));
  if (cfg.size > (SIZE_MAX / 2) / (slots_total + 1)) {
    return error(Code::kInvalidArgument, log::format("symmetric size %zu is too large", cfg.size));
  }
  std::shared_ptr<VirtualReservation> range;
  VSHMEM_ASSIGN_OR_RETURN(range, agree_on_range(provider, bootstrap, cfg.size * (slots_total + 1),
                                                std::max<size_t>(gran, 2u << 20)));
  VSHMEM_INFO("heap: H=%#lx S=%zu window slots=%zu chunk=%zu handles=%s mapped peers=%zu",
              static_cast<unsigned long>(range->base()), cfg.size, slots_total, cfg.chunk_size,
              handle_kind_name(kind), mapped_peers.size());
  std::vector<int> everyone(n);
  for (int p = 0; p < n; ++p) everyone[p] = p;
  HandleExchange handles(
      kind, fd_exchange,
      [&bootstrap](const void* mine, void* all, size_t bytes) {
        return bootstrap.allgather(mine, all, bytes);
      },
      std::move(everyone), me);
  return std::unique_ptr<SymmetricHeap>(
      new SymmetricHeap(provider, bootstrap, cfg, std::move(range), std::move(slots),
                        std::move(mapped_peers), std::move(handles), kind, me, slots_total));
}

SymmetricHeap::SymmetricHeap(MemoryProvider& provider, Bootstrap& bootstrap,
                             const HeapConfig& config, std::shared_ptr<VirtualReservation> range,
                             std::vector<int32_t> peer_slot, std::vector<int> mapped_peers,
                             HandleExchange handles, HandleKind kind, int my_pe,
                             size_t window_slots)
    : provider_(provider),
      bootstrap_(bootstrap),
      config_(config),
      range_(std::move(range)),
      base_(range_->base()),
      size_(config.size),
      peer_slot_(std::move(peer_slot)),
      mapped_peers_(std::move(mapped_peers)),
      handles_(std::move(handles)),
      handle_kind_(kind),
      my_pe_(my_pe),
      window_slots_(window_slots),
      allocator_(config.size, base_) {}

SymmetricHeap::~SymmetricHeap() {
  // Peers' chunks and ours are unmapped first (newest first), then the range goes.
  while (!mappings_.empty()) mappings_.pop_back();
}

Status SymmetricHeap::grow(size_t bytes) {
  const size_t offset = allocator_.committed();
  // Every attempt gets its own tag: messages of a failed attempt must never count for the next.
  const uint64_t tag = growth_attempts_++;
  // Every PE makes and maps its own chunk, then all agree that everyone did before any handle
  // moves: a PE that ran out of memory must not leave the others waiting for its handle, nor
  // leave the heaps asymmetric.
  // Where a growth's time goes, at VSHMEM_DEBUG=info (the first one is part of shmem_init).
  const bool timed = log::enabled(log::Level::kInfo);
  std::chrono::steady_clock::time_point at[6];
  auto mark = [&](int i) {
    if (timed) at[i] = std::chrono::steady_clock::now();
  };
  mark(0);
  std::shared_ptr<PhysicalAllocation> own;
  std::unique_ptr<Mapping> own_map;
  Status made;
  if (auto created = provider_.create(bytes)) {
    own = std::move(created).value();
    if (auto mapped = provider_.map(range_, offset, own)) {
      own_map = std::move(mapped).value();
    } else {
      made = mapped.status();
    }
  } else {
    made = created.status();
  }
  mark(1);
  VSHMEM_RETURN_IF_ERROR(agree_on_outcome(
      made, log::format("could not add %zu bytes of memory to %s heap", bytes, "%s")));
  mark(2);

  // Then every PE imports and maps its peers' chunks. Whether that worked is agreed too: either
  // every PE keeps the new chunk or none does, and every PE names the first PE that failed and
  // its cause (e.g. the open-file limit), instead of some heaps growing and others not.
  std::vector<std::unique_ptr<Mapping>> peer_maps;
  std::vector<std::vector<uint64_t>> peer_sizes(bootstrap_.size());
  for (int p : mapped_peers_) peer_sizes[p] = {bytes};
  std::chrono::steady_clock::time_point* exchanged = timed ? &at[3] : nullptr;
  Status mapped = map_peer_pieces({own}, peer_sizes, offset, 1, tag, &peer_maps, exchanged);
  mark(4);
  VSHMEM_RETURN_IF_ERROR(agree_on_outcome(
      mapped, log::format("could not map the new %zu-byte chunks of %s peers", bytes, "%s")));
  // The transport registers the chunk with the network in this same collective step; it agrees
  // on the outcome itself (every PE fails when one could not register).
  if (region_hook_) VSHMEM_RETURN_IF_ERROR(region_hook_(offset, bytes));
  mark(5);
  if (timed) {
    if (at[3] < at[2]) at[3] = at[2];  // no exchange (no mapped peer)
    auto ms = [&](int a, int b) {
      return std::chrono::duration<double, std::milli>(at[b] - at[a]).count();
    };
    VSHMEM_INFO(
        "heap growth by %zu bytes (ms): create and map own %.1f, agree %.1f, export and "
        "exchange handles %.1f, import and map %zu peers %.1f, agree and register %.1f",
        bytes, ms(0, 1), ms(1, 2), ms(2, 3), mapped_peers_.size(), ms(3, 4), ms(4, 5));
  }
  mappings_.push_back(std::move(own_map));
  for (auto& m : peer_maps) mappings_.push_back(std::move(m));
  allocator_.grow(bytes);
  ++growth_count_;
  VSHMEM_TRACE("heap grew by %zu bytes to %zu", bytes, allocator_.committed());
  if (on_chunk_) on_chunk_(offset, own);
  if (on_growth_) on_growth_();
  return Status::ok();
}

Status SymmetricHeap::agree_on_outcome(const Status& mine, const std::string& what,
                                       const char* consequence) {
  struct Outcome {
    int32_t code;
    char cause[508];
  };
  Outcome out{};
  out.code = static_cast<int32_t>(mine.code());
  std::snprintf(out.cause, sizeof(out.cause), "%s", mine.message().c_str());
  std::vector<Outcome> all(bootstrap_.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap_.allgather(&out, all.data(), sizeof(out)));
  for (int p = 0; p < bootstrap_.size(); ++p) {
    if (all[p].code == 0) continue;
    all[p].cause[sizeof(all[p].cause) - 1] = '\0';
    std::vector<int> failed;
    for (int q = 0; q < bootstrap_.size(); ++q) {
      if (all[q].code != 0) failed.push_back(q);
    }
    std::string who;
    for (int q : failed) who += (who.empty() ? "" : ", ") + std::to_string(q);
    // `what` has one %s for "its"/"their".
    const std::string did = log::format(what.c_str(), failed.size() > 1 ? "their" : "its");
    return error(static_cast<Code>(all[p].code),
                 log::format("PE%s %s %s; %s. PE %d: %s", failed.size() > 1 ? "s" : "", who.c_str(),
                             did.c_str(), consequence, p, all[p].cause));
  }
  return Status::ok();
}

std::vector<std::pair<size_t, std::shared_ptr<PhysicalAllocation>>> SymmetricHeap::own_chunks()
    const {
  std::vector<std::pair<size_t, std::shared_ptr<PhysicalAllocation>>> chunks;
  for (const auto& m : mappings_) {
    if (m->offset() < size_) chunks.emplace_back(m->offset(), m->physical());  // in H: ours
  }
  return chunks;
}

Status SymmetricHeap::check_symmetric(const char* call, uint64_t op, uint64_t a, uint64_t b) {
  struct Args {
    uint64_t op, a, b;
  } mine{op, a, b};
  std::vector<Args> all(bootstrap_.size());
  VSHMEM_RETURN_IF_ERROR(bootstrap_.allgather(&mine, all.data(), sizeof(mine)));
  for (int p = 1; p < bootstrap_.size(); ++p) {
    if (std::memcmp(&all[p], &all[0], sizeof(Args)) != 0) {
      const char* what = all[p].op != all[0].op ? "the call"
                         : all[p].a != all[0].a ? "the size or pointer"
                                                : "the alignment or second argument";
      return error(
          Code::kInvalidArgument,
          log::format("%s: PEs disagree on %s (PE 0 passed %llu/%llu to op %llu, PE %d "
                      "passed %llu/%llu to op %llu); nothing was done",
                      call, what, (unsigned long long)all[0].a, (unsigned long long)all[0].b,
                      (unsigned long long)all[0].op, p, (unsigned long long)all[p].a,
                      (unsigned long long)all[p].b, (unsigned long long)all[p].op));
    }
  }
  return Status::ok();
}

Result<void*> SymmetricHeap::allocate(size_t size, size_t alignment, const char* call) {
  if (config_.check_symmetry) VSHMEM_RETURN_IF_ERROR(check_symmetric(call, 1, size, alignment));
  if (size == 0) return static_cast<void*>(nullptr);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return error(Code::kInvalidArgument,
                 log::format("%s: alignment %zu is not a power of two", call, alignment));
  }
  auto need = allocator_.growth_needed(size, alignment);
  if (!need) {
    return error(Code::kOutOfMemory,
                 log::format("%s: %zu bytes do not fit in the symmetric heap (%zu bytes in use of "
                             "%zu; raise SHMEM_SYMMETRIC_SIZE)",
                             call, size, allocator_.bytes_in_use(), size_));
  }
  if (*need > 0) {
    size_t step = round_up(std::max(*need, config_.chunk_size), provider_.granularity());
    step = std::min(step, size_ - allocator_.committed());
    VSHMEM_RETURN_IF_ERROR(grow(step).with_context(std::string(call) + ": growing the heap: "));
  }
  auto offset = allocator_.allocate(size, alignment);
  if (!offset) {
    return error(Code::kOutOfMemory,
                 log::format("%s: allocator found no block after growth", call));
  }
  return reinterpret_cast<void*>(base_ + *offset);
}

Status SymmetricHeap::commit_at_least(size_t bytes, const char* call) {
  bytes = std::min(round_up(bytes, provider_.granularity()), size_);
  if (bytes <= allocator_.committed()) return Status::ok();
  return grow(bytes - allocator_.committed())
      .with_context(std::string(call) + ": committing the initial heap: ");
}

Status SymmetricHeap::free(void* ptr, const char* call) {
  uint64_t off = ptr == nullptr ? ~0ull : reinterpret_cast<uintptr_t>(ptr) - base_;
  if (config_.check_symmetry) VSHMEM_RETURN_IF_ERROR(check_symmetric(call, 2, off, 0));
  if (ptr == nullptr) return Status::ok();
  if (!contains(ptr, 1) || !allocator_.free(off)) {
    return error(Code::kInvalidArgument,
                 log::format("%s(%p): not the start of a live symmetric allocation", call, ptr));
  }
  return Status::ok();
}

Result<size_t> SymmetricHeap::block_size(const void* ptr) const {
  if (!contains(ptr, 1)) {
    return error(Code::kInvalidArgument, log::format("%p is not in the symmetric heap", ptr));
  }
  auto s = allocator_.block_size(reinterpret_cast<uintptr_t>(ptr) - base_);
  if (!s) {
    return error(Code::kInvalidArgument,
                 log::format("%p is not the start of a live symmetric allocation", ptr));
  }
  return *s;
}

namespace {
// At most this many separate allocations in one registered buffer (their descriptors travel in
// one message).
constexpr size_t kMaxPieces = 128;
}  // namespace

Status SymmetricHeap::map_peer_pieces(const std::vector<std::shared_ptr<PhysicalAllocation>>& own,
                                      const std::vector<std::vector<uint64_t>>& peer_sizes,
                                      size_t offset, size_t max_pieces, uint64_t tag,
                                      std::vector<std::unique_ptr<Mapping>>* peer_maps,
                                      std::chrono::steady_clock::time_point* exchanged) {
  // Fabric handles travel in an allgather of every PE, so every PE takes part, mapped peers or
  // not, and also after a failed export (the outcome agreement after it fails the step
  // everywhere).
  if (handle_kind_ != HandleKind::kFabric && mapped_peers_.empty()) return Status::ok();
  std::vector<ShareableHandle> mine;
  Status exported;
  for (size_t i = 0; i < own.size() && exported.is_ok(); ++i) {
    if (auto h = own[i]->export_handle(handle_kind_)) {
      mine.push_back(std::move(h).value());
    } else {
      exported = h.status();
    }
  }
  HandleExchange::Received received;
  VSHMEM_ASSIGN_OR_RETURN(received,
                          handles_.exchange(mapped_peers_, mine, exported, max_pieces, tag));
  if (exchanged != nullptr) *exchanged = std::chrono::steady_clock::now();
  for (int p : mapped_peers_) {
    std::vector<ShareableHandle> hs;
    VSHMEM_ASSIGN_OR_RETURN(
        hs, HandleExchange::take(received, p, peer_sizes[p].size(), "memory handle"));
    size_t at = offset;
    for (size_t i = 0; i < hs.size(); ++i) {
      std::shared_ptr<PhysicalAllocation> phys;
      VSHMEM_ASSIGN_OR_RETURN(phys, provider_.import(std::move(hs[i]), peer_sizes[p][i]));
      std::unique_ptr<Mapping> m;
      VSHMEM_ASSIGN_OR_RETURN(
          m, provider_.map(range_, size_ * (1 + static_cast<size_t>(peer_slot_[p])) + at, phys));
      peer_maps->push_back(std::move(m));
      at += peer_sizes[p][i];
    }
  }
  return Status::ok();
}

Result<void*> SymmetricHeap::register_buffer(void* buf, size_t size, int flags, const char* call) {
  VSHMEM_RETURN_IF_ERROR(check_symmetric(call, 3, size, static_cast<uint32_t>(flags)));
  const int n = bootstrap_.size();
  // 1. This PE's pieces, and whether the job can share them: every peer must be one we map
  //    (a PE of another node would need the network to register the memory).
  std::vector<std::shared_ptr<PhysicalAllocation>> pieces;
  Status mine;
  if (flags != 0) {
    mine = error(Code::kInvalidArgument, log::format("flags %#x: no flags are defined", flags));
  } else if (buf == nullptr || size == 0) {
    mine = error(Code::kInvalidArgument,
                 log::format("buffer %p, %zu bytes: nothing to register", buf, size));
  } else if (mapped_peers_.size() + 1 != static_cast<size_t>(n)) {
    int unmapped = -1;
    for (int p = 0; p < n && unmapped < 0; ++p) {
      if (p != my_pe_ && peer_slot_[p] < 0) unmapped = p;
    }
    mine = error(Code::kUnsupported,
                 log::format("PE %d's memory is not mapped here (another node, or no peer "
                             "access): registered buffers reach only PEs that map each other's "
                             "memory",
                             unmapped));
  } else if (auto r = provider_.retain_mapped(buf, size, handle_kind_)) {
    pieces = std::move(r).value();
    if (pieces.size() > kMaxPieces) {
      mine = error(Code::kUnsupported,
                   log::format("the buffer is made of %zu separate allocations (at most %zu)",
                               pieces.size(), kMaxPieces));
    }
  } else {
    mine = r.status();
  }
  // 2. Where it goes: the first unregistered range that holds it, else after the committed part.
  const size_t span = round_up(size, provider_.granularity());
  size_t offset = 0;
  bool from_hole = false;
  for (const auto& [off, len] : holes_) {
    if (len >= span) {
      offset = off;
      from_hole = true;
      break;
    }
  }
  if (!from_hole) {
    offset = allocator_.committed();
    if (mine.is_ok() && span > size_ - offset) {
      mine = error(Code::kOutOfMemory,
                   log::format("%zu bytes do not fit in the symmetric heap's address range "
                               "(%zu of %zu bytes committed; raise SHMEM_SYMMETRIC_SIZE)",
                               size, offset, size_));
    }
  }
  // 3. Map ours at H + offset.
  Registered reg{offset, size, {}};
  size_t at = offset;
  for (size_t i = 0; i < pieces.size() && mine.is_ok(); ++i) {
    if (auto m = provider_.map(range_, at, pieces[i])) {
      reg.maps.push_back(std::move(m).value());
      at += pieces[i]->size();
    } else {
      mine = m.status();
    }
  }
  VSHMEM_RETURN_IF_ERROR(
      agree_on_outcome(mine.with_context(std::string(call) + ": "),
                       log::format("could not register %s buffer of %zu bytes", "%s", size),
                       "nothing was registered"));
  // 4. Every PE learns the others' piece sizes, then maps the peers' pieces.
  std::vector<uint64_t> my_sizes(kMaxPieces + 1, 0),
      all_sizes(static_cast<size_t>(n) * (kMaxPieces + 1));
  my_sizes[0] = pieces.size();
  for (size_t i = 0; i < pieces.size(); ++i) my_sizes[i + 1] = pieces[i]->size();
  VSHMEM_RETURN_IF_ERROR(
      bootstrap_.allgather(my_sizes.data(), all_sizes.data(), my_sizes.size() * sizeof(uint64_t)));
  std::vector<std::vector<uint64_t>> peer_sizes(n);
  for (int p = 0; p < n; ++p) {
    const uint64_t* row = &all_sizes[static_cast<size_t>(p) * (kMaxPieces + 1)];
    peer_sizes[p].assign(row + 1, row + 1 + row[0]);
  }
  std::vector<std::unique_ptr<Mapping>> peer_maps;
  const uint64_t tag = growth_attempts_++;
  Status mapped = map_peer_pieces(pieces, peer_sizes, offset, kMaxPieces, tag, &peer_maps);
  VSHMEM_RETURN_IF_ERROR(agree_on_outcome(
      mapped.with_context(std::string(call) + ": "),
      log::format("could not map %s peers' registered buffers", "%s"), "nothing was registered"));
  for (auto& m : peer_maps) reg.maps.push_back(std::move(m));
  if (from_hole) {
    const size_t hole = holes_[offset];
    holes_.erase(offset);
    if (hole > span) holes_[offset + span] = hole - span;
  } else {
    allocator_.skip(span);
  }
  registered_.push_back(std::move(reg));
  VSHMEM_INFO("%s: %zu bytes (%zu allocation%s) at %#lx", call, size, pieces.size(),
              pieces.size() == 1 ? "" : "s", static_cast<unsigned long>(base_ + offset));
  if (on_growth_) on_growth_();
  return reinterpret_cast<void*>(base_ + offset);
}

Status SymmetricHeap::unregister_buffer(void* sym, size_t size, const char* call) {
  const uint64_t off = sym == nullptr ? ~0ull : reinterpret_cast<uintptr_t>(sym) - base_;
  VSHMEM_RETURN_IF_ERROR(check_symmetric(call, 4, off, size));
  auto it = std::find_if(registered_.begin(), registered_.end(),
                         [&](const Registered& r) { return r.offset == off; });
  if (sym == nullptr || it == registered_.end()) {
    return error(Code::kInvalidArgument, log::format("%s(%p): not an address returned by "
                                                     "shmemx_buffer_register_symmetric",
                                                     call, sym));
  }
  if (it->size != size) {
    return error(Code::kInvalidArgument,
                 log::format("%s(%p, %zu bytes): it was registered with %zu bytes", call, sym, size,
                             it->size));
  }
  // No peer may still be using it when the mappings go (every PE reached this call).
  VSHMEM_RETURN_IF_ERROR(bootstrap_.barrier());
  while (!it->maps.empty()) it->maps.pop_back();  // peers' first, ours last
  size_t span = round_up(it->size, provider_.granularity());
  size_t start = it->offset;
  registered_.erase(it);
  // Merge with neighbouring holes.
  auto next = holes_.find(start + span);
  if (next != holes_.end()) {
    span += next->second;
    holes_.erase(next);
  }
  auto prev = holes_.lower_bound(start);
  if (prev != holes_.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      start = prev->first;
      span += prev->second;
      holes_.erase(prev);
    }
  }
  holes_[start] = span;
  return Status::ok();
}

}  // namespace vshmem
