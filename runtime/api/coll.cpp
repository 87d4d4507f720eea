// Collectives over teams and over the deprecated active sets. Every algorithm synchronizes
// through the pairwise signal counters of the group's slot (team.hpp) and moves data with
// rma_get/rma_put, so it runs unchanged over host memory, the GPU heap and the remote path:
//   barrier    dissemination, ceil(log2 n) rounds;
//   broadcast  small, every member mapped host memory: pushed, the root writes every member's
//              dest and signals it (one wait per member); else a binomial tree, pulled: a PE
//              gets the data from its parent once the parent signals, then releases its own
//              children (depth ceil(log2 n));
//   reduce     small, every member mapped host memory, predefined teams of at most 16 PEs:
//              every member writes its source into every other member's mailbox and combines
//              all of them in member order (one wait per call); large on mapped host memory:
//              each member combines one slice straight from every source; else recursive
//              doubling on a power-of-two core (the PEs beyond it fold in first and receive the
//              result last). Every PE computes the same combination order, so floating-point
//              results agree bit for bit across PEs;
//   fcollect, alltoall(s)  small (a block of at most 1 KiB per member pair), the same teams and
//              memory as the flat reduce: every member writes its block for every other member
//              into that member's mailbox (one wait per call);
//   alltoall(s) larger contiguous blocks, every member mapped host memory: pushed, each PE writes
//              its block into every member's dest once that member has signalled that it entered
//              the call, then signals it (alltoall_pushed);
//   collect, fcollect, alltoall(s): else each PE gets its share from every source, between two
//              barriers (sources ready / sources no longer read).
#define VSHMEM_COMPLEX_AS_STRUCT 1  // the complex types are two-member structs here

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "runtime/api/team.hpp"
#include "runtime/memory/host_copy.hpp"
#include "shmem.h"

using namespace vshmem;
using namespace vshmem::detail;

namespace vshmem::detail {

namespace {

// Every member's copy of a symmetric heap object, when every member's memory is ordinary host
// memory mapped here; empty otherwise. The same answer on every member: the backend, the mapped
// peers and the heap's committed size are the same everywhere.
std::vector<unsigned char*> mapped_copies(Runtime& rt, const Group& g, const void* object,
                                          size_t bytes) {
  std::vector<unsigned char*> copies;
  const auto a = reinterpret_cast<uintptr_t>(object);
  if (!rt.transport->host_loads_reach_heap() || !rt.heap->contains(object, bytes) ||
      a - rt.heap->base() + bytes > rt.heap->committed()) {
    return copies;
  }
  copies.resize(g.size());
  for (int i = 0; i < g.size(); ++i) {
    copies[i] = static_cast<unsigned char*>(rt.heap->translate(object, g.members[i]));
    if (copies[i] == nullptr) return {};  // a remote member
  }
  return copies;
}

// Pushed broadcast: the root writes every member's dest, then signals it; a member waits for that
// one signal. OpenSHMEM 1.5 (broadcast routines) requires dest to be ready on every member before
// any member calls the broadcast, which is what lets the root write it without asking first.
// Each member waits once, whatever the team's size: when PEs outnumber the cores, every wait is a
// trip through the scheduler, and a tree's log2(n) dependent waits cost that many.
constexpr size_t kPushedBroadcastBytes = size_t{256} * 1024;  // the root copies (n - 1) times this

bool broadcast_pushed(Runtime& rt, const Group& g, void* dest, const void* source, size_t bytes,
                      int root, bool root_gets_dest, const char* call) {
  const int n = g.size();
  if (bytes * static_cast<size_t>(n - 1) > kPushedBroadcastBytes) return false;
  const std::vector<unsigned char*> to = mapped_copies(rt, g, dest, bytes);
  if (to.empty()) return false;
  if (g.my_index != root) {
    group_wait(rt, g, g.members[root], call);  // dest holds the data
    return true;
  }
  // Every member's data and signal first, then the wakes: a wake can hand this core to the woken
  // member, and the members not yet written would wait for us to get it back.
  thread_local std::vector<int> woken;
  woken.clear();
  for (int k = 1; k < n; ++k) {
    const int i = (root + k) % n;
    std::memcpy(to[i], source, bytes);
    group_post(rt, g, g.members[i], call);
    woken.push_back(g.members[i]);
  }
  group_wake(rt, woken.data(), static_cast<int>(woken.size()));
  if (root_gets_dest) local_copy(rt, dest, source, bytes, call);
  return true;
}

}  // namespace

void group_broadcast(Runtime& rt, const Group& g, void* dest, const void* source, size_t bytes,
                     int root, bool root_gets_dest, const char* call) {
  const int n = g.size();
  const int v = (g.my_index - root + n) % n;  // rank relative to the root
  auto world = [&](int rel) { return g.members[(rel + root) % n]; };
  if (n > 1 && bytes > 0 &&
      broadcast_pushed(rt, g, dest, source, bytes, root, root_gets_dest, call))
    return;
  if (v == 0 && root_gets_dest) local_copy(rt, dest, source, bytes, call);
  if (bytes == 0 || n == 1) return;
  int high = 0;  // the highest power of two <= v (0 for the root)
  if (v != 0) {
    high = 1;
    while (high * 2 <= v) high *= 2;
    int parent = world(v - high);
    group_wait(rt, g, parent, call);  // the parent's copy is complete
    rma_get(rt, dest, v - high == 0 ? source : dest, bytes, parent, call);
    group_signal(rt, g, parent, call);  // done reading it
  }
  std::vector<int> children;
  for (int step = high == 0 ? 1 : high * 2; v + step < n; step *= 2)
    children.push_back(world(v + step));
  for (int c : children) group_signal(rt, g, c, call);
  // Our buffer (source at the root, dest elsewhere) must stay untouched until every child has
  // read it: the caller may reuse it as soon as we return.
  for (int c : children) group_wait(rt, g, c, call);
}

namespace {

// Scratch for reductions, kept between calls and grown when a larger reduction needs it: a
// fresh buffer per call costs a page fault per 4 KiB touched (about 500 for a 1 MiB reduction),
// more than the reduction's own work. Per thread, because SHMEM_THREAD_MULTIPLE allows
// reductions on different teams from several threads at once.
unsigned char* reduce_scratch(size_t bytes) {
  thread_local std::vector<unsigned char> scratch;
  if (scratch.size() < bytes) scratch.resize(bytes);
  return scratch.data();
}

// Mailbox exchange of small blocks (team.hpp, flat_cell): for every other member i, put(i, cell)
// writes our `bytes`-byte block for i into i's mailbox for us, and we signal i; then, for every
// member i in member order, we wait for i's signal and take(i, block) reads i's block for us (our
// own: the block put(me, ...) wrote into scratch). One wait per member per call, whatever the
// team's size, against 2 log2(n) dependent waits for recursive doubling and two barriers around
// the gets of the pulled collects: what counts when PEs outnumber the cores. The mailboxes, not
// dest, receive the data, so nothing depends on the members' dest being ready. Needs mailboxes
// (the predefined teams, jobs of at most kFlatMaxPes PEs) and every member mapped host memory;
// false (nothing done) otherwise, with the same answer on every member.
template <typename Put, typename Take>
bool flat_exchange(Runtime& rt, const Group& g, size_t bytes, Put&& put, Take&& take,
                   const char* call) {
  const int n = g.size(), r = g.my_index;
  if (bytes > kFlatCellBytes || flat_cell(g, 0, 0) == nullptr ||
      !rt.transport->host_loads_reach_heap()) {
    return false;
  }
  // Where our blocks go on each member, decided whole before anything is written (the same answer
  // on every member: the mailboxes and the mapped peers are the same everywhere).
  thread_local std::vector<unsigned char*> to;
  to.assign(n, nullptr);
  for (int i = 0; i < n; ++i) {
    if (i == r) continue;
    to[i] = static_cast<unsigned char*>(
        rt.heap->translate(flat_cell(g, flat_parity(g, g.members[i]), rt.my_pe), g.members[i]));
    if (to[i] == nullptr) return false;  // a remote member
  }
  thread_local std::vector<int> woken;
  woken.clear();
  for (int k = 1; k < n; ++k) {
    const int i = (r + k) % n;  // start after ourselves: spreads the writes over the members
    put(i, to[i]);
    group_post(rt, g, g.members[i], call);
    woken.push_back(g.members[i]);
  }
  group_wake(rt, woken.data(), static_cast<int>(woken.size()));  // all written: see broadcast
  thread_local std::vector<unsigned char> own;
  own.resize(kFlatCellBytes);
  put(r, own.data());
  for (int i = 0; i < n; ++i) {
    if (i == r) {
      take(i, static_cast<const unsigned char*>(own.data()));
      continue;
    }
    group_wait(rt, g, g.members[i], call);
    take(i, static_cast<const unsigned char*>(
                flat_cell(g, flat_parity(g, g.members[i]), g.members[i])));
    advance_flat_parity(g, g.members[i]);
  }
  return true;
}

// Flat reduction of a small array: every member's source goes to every other member's mailbox;
// each member combines all n contributions in member order, so the bits are the same on every
// member.
bool reduce_flat(Runtime& rt, const Group& g, void* dest, const void* source, size_t count,
                 size_t elem, CombineFn combine, const char* call) {
  const size_t bytes = count * elem;
  unsigned char* acc = reduce_scratch(bytes);
  const bool done = flat_exchange(
      rt, g, bytes, [&](int, unsigned char* cell) { std::memcpy(cell, source, bytes); },
      [&](int i, const unsigned char* v) {
        if (i == 0) {
          std::memcpy(acc, v, bytes);
        } else {
          combine(acc, v, count);
        }
      },
      call);
  if (!done) return false;
  // In place (dest == source) is safe: source was read whole above.
  local_copy(rt, dest, acc, bytes, call);
  return true;
}

// Direct reduction when every member's memory is ordinary host memory mapped here: each PE
// combines one slice of the result straight from the members' sources (in member order, so the
// bits are the same whoever computes them), then copies the other slices from their owners'
// dest. Each byte is read once from each source and written twice; the only scratch is one
// cache-sized chunk.
bool reduce_direct(Runtime& rt, const Group& g, void* dest, const void* source, size_t count,
                   size_t elem, CombineFn combine, const char* call) {
  const int n = g.size();
  // The same answer on every member: the backend, the mapped peers and the heap's committed
  // size are the same everywhere, and a symmetric source is where it is on every PE (a private
  // source, which the pairwise form also accepts, is not reachable by the others).
  const auto s = reinterpret_cast<uintptr_t>(source);
  if (!rt.transport->host_loads_reach_heap() || !rt.heap->contains(source, count * elem) ||
      s - rt.heap->base() + count * elem > rt.heap->committed()) {
    return false;
  }
  std::vector<const unsigned char*> src(n);
  std::vector<unsigned char*> dst(n);
  for (int i = 0; i < n; ++i) {
    src[i] = static_cast<const unsigned char*>(rt.heap->translate(source, g.members[i]));
    dst[i] = static_cast<unsigned char*>(rt.heap->translate(dest, g.members[i]));
    if (src[i] == nullptr || dst[i] == nullptr) return false;  // a remote member
  }
  const size_t per = (count + n - 1) / n;
  auto slice = [&](int i) {
    return std::pair{std::min(count, i * per), std::min(count, (i + 1) * per)};
  };
  constexpr size_t kChunkBytes = 16384;
  const size_t chunk = std::max<size_t>(1, kChunkBytes / elem);
  unsigned char* acc = reduce_scratch(chunk * elem);
  group_barrier(rt, g, call);  // every source is ready
  const auto [lo, hi] = slice(g.my_index);
  for (size_t c = lo; c < hi; c += chunk) {
    const size_t m = std::min(chunk, hi - c), off = c * elem;
    std::memcpy(acc, src[0] + off, m * elem);
    for (int i = 1; i < n; ++i) combine(acc, src[i] + off, m);
    // In place (dest == source) is safe: only this PE reads this slice of its own source, and
    // it has read this chunk of it.
    std::memcpy(dst[g.my_index] + off, acc, m * elem);
  }
  group_barrier(rt, g, call);  // every slice is complete in its owner's dest
  for (int k = 1; k < n; ++k) {
    const int i = (g.my_index + k) % n;
    const auto [l, h] = slice(i);
    if (h > l) host_copy(dst[g.my_index] + l * elem, dst[i] + l * elem, (h - l) * elem);
  }
  group_barrier(rt, g, call);  // nobody reads our dest any more
  return true;
}

}  // namespace

void group_reduce(Runtime& rt, const Group& g, void* dest, const void* source, size_t count,
                  size_t elem, CombineFn combine, const char* call) {
  const size_t bytes = count * elem;
  const int n = g.size(), r = g.my_index;
  // Below a few KiB, the three barriers of the direct form cost more than the pairwise steps.
  constexpr size_t kDirectFromBytes = 4096;
  if (n > 1 && bytes >= kDirectFromBytes &&
      reduce_direct(rt, g, dest, source, count, elem, combine, call)) {
    return;
  }
  if (n > 1 && reduce_flat(rt, g, dest, source, count, elem, combine, call)) return;
  unsigned char* acc = reduce_scratch(2 * bytes);
  unsigned char* other = acc + bytes;
  local_copy(rt, acc, source, bytes, call);
  auto publish = [&] { local_copy(rt, dest, acc, bytes, call); };
  if (n == 1) {
    publish();
    return;
  }
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  if (r >= pow2) {
    // Beyond the power-of-two core: hand our data to PE r - pow2 and receive the result there.
    const int partner = g.members[r - pow2];
    publish();
    group_signal(rt, g, partner, call);
    group_wait(rt, g, partner, call);  // the result is in our dest
    return;
  }
  const int extra = r + pow2 < n ? g.members[r + pow2] : -1;
  if (extra >= 0) {
    group_wait(rt, g, extra, call);
    rma_get(rt, other, dest, bytes, extra, call);
    combine(acc, other, count);
  }
  for (int mask = 1; mask < pow2; mask <<= 1) {
    const int partner = g.members[r ^ mask];
    publish();
    group_signal(rt, g, partner, call);  // our partial result is readable
    group_wait(rt, g, partner, call);
    rma_get(rt, other, dest, bytes, partner, call);
    group_signal(rt, g, partner, call);  // we have read theirs
    group_wait(rt, g, partner, call);    // they have read ours: dest may change again
    // a OP b == b OP a exactly for every reduction operator, so both partners hold the same bits.
    combine(acc, other, count);
  }
  publish();
  if (extra >= 0) {
    rma_put(rt, dest, acc, bytes, extra, call);
    group_signal(rt, g, extra, call);
  }
}

}  // namespace vshmem::detail

namespace {

// --- element-wise operators --------------------------------------------------------------------

struct CplxD {
  double re, im;
};
struct CplxF {
  float re, im;
};
static_assert(sizeof(CplxD) == sizeof(vshmem_complexd_t) &&
              sizeof(CplxF) == sizeof(vshmem_complexf_t));

template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, CplxD> || std::is_same_v<T, CplxF>;

// Integer sums and products wrap (two's complement), as the unsigned arithmetic they run in.
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else if constexpr (kIsComplex<T>) {
    return T{a.re + b.re, a.im + b.im};
  } else {
    return a + b;
  }
}

template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Promote to at least unsigned int so that unsigned short * unsigned short cannot overflow
    // a signed int.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(
        static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else if constexpr (kIsComplex<T>) {
    return T{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  } else {
    return a * b;
  }
}

struct OpAnd {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct OpOr {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct OpXor {
  template <typename T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};
struct OpMax {
  template <typename T>
  static T apply(T a, T b) {
    return a < b ? b : a;
  }
};
struct OpMin {
  template <typename T>
  static T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct OpSum {
  template <typename T>
  static T apply(T a, T b) {
    return wrap_add(a, b);
  }
};
struct OpProd {
  template <typename T>
  static T apply(T a, T b) {
    return wrap_mul(a, b);
  }
};

template <typename T, typename Op>
void combine(void* acc, const void* other, size_t count) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(other);
  for (size_t i = 0; i < count; ++i) a[i] = Op::apply(a[i], b[i]);
}

// The implementation's view of each reduction element type.
template <typename T>
struct Elem {
  using type = T;
};
template <>
struct Elem<vshmem_complexd_t> {
  using type = CplxD;
};
template <>
struct Elem<vshmem_complexf_t> {
  using type = CplxF;
};

// --- validation --------------------------------------------------------------------------------

size_t bytes_of(size_t nelems, size_t elem, const char* call) {
  size_t bytes;
  if (__builtin_mul_overflow(nelems, elem, &bytes)) {
    fail(call, "%zu elements of %zu bytes overflow size_t", nelems, elem);
  }
  return bytes;
}

bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

void check_disjoint(const void* dest, size_t dest_bytes, const void* source, size_t source_bytes,
                    const char* call) {
  if (overlap(dest, dest_bytes, source, source_bytes)) {
    fail(call,
         "source %p (+%zu bytes) and dest %p (+%zu bytes) overlap, which this collective "
         "does not allow",
         source, source_bytes, dest, dest_bytes);
  }
}

// Same array or disjoint (reductions and broadcast).
void check_same_or_disjoint(const void* dest, const void* source, size_t bytes, const char* call) {
  if (dest != source && overlap(dest, bytes, source, bytes)) {
    fail(call, "source %p and dest %p overlap without being the same array (+%zu bytes)", source,
         dest, bytes);
  }
}

struct Call {
  Runtime& rt;
  const Group& group;
};

Call team_call(shmem_team_t team, const char* call) {
  Runtime& rt = runtime_for(call);
  return Call{rt, team_for(team, call).group};
}

// The deprecated active set PE_start + k * 2^logPE_stride, k < PE_size, as a group running on
// the shared active-set slot.
Group active_set(Runtime& rt, int PE_start, int logPE_stride, int PE_size, const long* pSync,
                 const char* call) {
  if (pSync == nullptr) fail(call, "pSync is NULL");
  if (logPE_stride < 0 || logPE_stride > 30)
    fail(call, "logPE_stride %d is out of range", logPE_stride);
  if (PE_size < 1) fail(call, "PE_size %d must be at least 1", PE_size);
  const long long stride = 1ll << logPE_stride;
  const long long last = PE_start + (PE_size - 1) * stride;
  if (PE_start < 0 || last >= rt.n_pes) {
    fail(call,
         "the active set (PE_start %d, logPE_stride %d, PE_size %d) reaches PE %lld, "
         "outside the job's PEs 0..%d",
         PE_start, logPE_stride, PE_size, PE_start < 0 ? static_cast<long long>(PE_start) : last,
         rt.n_pes - 1);
  }
  Group g;
  g.slot = kActiveSetSlot;
  g.members.resize(PE_size);
  for (int k = 0; k < PE_size; ++k) {
    g.members[k] = static_cast<int>(PE_start + k * stride);
    if (g.members[k] == rt.my_pe) g.my_index = k;
  }
  if (g.my_index < 0) {
    fail(call, "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)",
         PE_start, logPE_stride, PE_size);
  }
  return g;
}

// --- the collectives, over a group -------------------------------------------------------------

// VSHMEM_CHECK_SYMMETRY: every member passed the same PE_root and size (else the broadcast is
// silently wrong); every member that sees a difference fails naming the PE and both arguments.
void check_same_broadcast(Runtime& rt, const Group& g, int root, size_t bytes, const char* call) {
  const uint64_t mine[2] = {static_cast<uint64_t>(root), bytes};
  uint64_t* words = group_words(g);  // free between collectives (each ends with a barrier)
  local_copy(rt, words, mine, sizeof(mine), call);
  group_barrier(rt, g, call);
  for (int i = 0; i < g.size(); ++i) {
    if (i == g.my_index) continue;
    uint64_t theirs[2];
    rma_get(rt, theirs, words, sizeof(theirs), g.members[i], call);
    if (theirs[0] != mine[0] || theirs[1] != mine[1]) {
      fail(call,
           "PEs disagree (VSHMEM_CHECK_SYMMETRY): PE %d passed PE_root %llu and %llu bytes, this "
           "PE PE_root %d and %zu bytes",
           g.members[i], static_cast<unsigned long long>(theirs[0]),
           static_cast<unsigned long long>(theirs[1]), root, bytes);
    }
  }
  group_barrier(rt, g, call);  // nobody reads the words any more
}

void broadcast(Runtime& rt, const Group& g, void* dest, const void* source, size_t nelems,
               size_t elem, int root, bool root_gets_dest, const char* call) {
  const size_t bytes = bytes_of(nelems, elem, call);
  if (root < 0 || root >= g.size()) {
    fail(call, "PE_root %d is not a PE of the team (its PEs are 0..%d)", root, g.size() - 1);
  }
  if (rt.heap->checks_symmetry() && g.size() > 1) check_same_broadcast(rt, g, root, bytes, call);
  if (bytes == 0) return;
  check_symmetric(rt, dest, bytes, call, "dest");
  check_same_or_disjoint(dest, source, bytes, call);
  group_broadcast(rt, g, dest, source, bytes, root, root_gets_dest, call);
}

void fcollect(Runtime& rt, const Group& g, void* dest, const void* source, size_t nelems,
              size_t elem, const char* call) {
  const size_t bytes = bytes_of(nelems, elem, call);
  const size_t total = bytes_of(bytes, g.size(), call);
  if (bytes == 0) return;
  check_symmetric(rt, dest, total, call, "dest");
  check_symmetric(rt, source, bytes, call, "source");
  check_disjoint(dest, total, source, bytes, call);
  auto* d = static_cast<char*>(dest);
  // Small blocks through the mailboxes: one wait per member instead of two barriers.
  if (g.size() > 1 &&
      flat_exchange(
          rt, g, bytes, [&](int, unsigned char* cell) { std::memcpy(cell, source, bytes); },
          [&](int i, const unsigned char* v) { std::memcpy(d + i * bytes, v, bytes); }, call)) {
    return;
  }
  group_barrier(rt, g, call);  // every source is ready
  for (int k = 0; k < g.size(); ++k) {
    int j = (g.my_index + k) % g.size();  // start at ourselves: spreads the load on the sources
    rma_get(rt, d + j * bytes, source, bytes, g.members[j], call);
  }
  group_barrier(rt, g, call);  // nobody reads our source any more
}

void collect(Runtime& rt, const Group& g, void* dest, const void* source, size_t nelems,
             size_t elem, const char* call) {
  const size_t bytes = bytes_of(nelems, elem, call);
  if (bytes > 0) check_symmetric(rt, source, bytes, call, "source");
  // Everyone's contribution size goes through the slot's scratch word.
  uint64_t mine = nelems;
  uint64_t* word = group_words(g);
  local_copy(rt, word, &mine, sizeof(mine), call);
  group_barrier(rt, g, call);
  std::vector<size_t> offset(g.size() + 1, 0);
  for (int j = 0; j < g.size(); ++j) {
    uint64_t theirs = mine;
    if (j != g.my_index) rma_get(rt, &theirs, word, sizeof(theirs), g.members[j], call);
    offset[j + 1] = offset[j] + bytes_of(theirs, elem, call);
  }
  const size_t total = offset[g.size()];
  if (total > 0) {
    check_symmetric(rt, dest, total, call, "dest");
    check_disjoint(dest, total, source, bytes, call);
  }
  auto* d = static_cast<char*>(dest);
  for (int k = 0; k < g.size(); ++k) {
    int j = (g.my_index + k) % g.size();
    rma_get(rt, d + offset[j], source, offset[j + 1] - offset[j], g.members[j], call);
  }
  group_barrier(rt, g, call);  // sources and scratch words are no longer read
}

// Pushed alltoall of contiguous blocks, when every member's memory is ordinary host memory mapped
// here: each PE copies its block for member i straight into i's dest, then signals i; a PE's dest
// is complete once every member's signal has arrived, and our source is read by us alone, before
// we return. A member's dest is written only after that member has entered the call (its "ready"
// signal, posted to every member on entry): OpenSHMEM requires dest to be ready on every member
// before any member calls an alltoall, but programs commonly poison or read their dest right up
// to the call (the pulled form, with its leading barrier, allowed it), and a PE still reading the
// previous collective's result in dest must not see it overwritten. Two signals per member pair
// and no barrier, against the pulled form's two barriers around its gets (sources ready, sources
// no longer read). False (nothing done) where a member is not mapped, with the same answer on
// every member.
bool alltoall_pushed(Runtime& rt, const Group& g, char* dest, const char* source, size_t block,
                     const char* call) {
  const int n = g.size(), me = g.my_index;
  const std::vector<unsigned char*> to =
      mapped_copies(rt, g, dest, bytes_of(block, static_cast<size_t>(n), call));
  if (to.empty()) return false;
  thread_local std::vector<int> others, index_of;
  others.clear();
  index_of.resize(rt.n_pes);
  for (int k = 1; k < n; ++k) {
    others.push_back(g.members[(me + k) % n]);
    index_of[g.members[(me + k) % n]] = (me + k) % n;
  }
  group_post_all(rt, g, others, call);  // our dest is ready
  // Write each member as soon as it has entered, whichever enters first: when PEs outnumber the
  // cores, a member that is not running would otherwise hold up the writes to those that are.
  thread_local std::vector<int> written;
  while (!others.empty()) {
    const int ready = group_take_ready(rt, g, others, call);
    written.assign(others.end() - ready, others.end());
    others.resize(others.size() - ready);
    for (int m : written) {
      const size_t i = static_cast<size_t>(index_of[m]);
      host_copy(to[i] + static_cast<size_t>(me) * block, source + i * block, block);
      group_post(rt, g, m, call);  // m's block from us is there
    }
    group_wake(rt, written.data(), static_cast<int>(written.size()));
  }
  host_copy(dest + static_cast<size_t>(me) * block, source + static_cast<size_t>(me) * block,
            block);
  // Every member's block for us (in any order: all of them are needed).
  for (int k = 1; k < n; ++k) group_wait(rt, g, g.members[(me - k + n) % n], call);
  return true;
}

void alltoalls(Runtime& rt, const Group& g, void* dest, const void* source, ptrdiff_t dst,
               ptrdiff_t sst, size_t nelems, size_t elem, const char* call) {
  if (dst < 1 || sst < 1) fail(call, "strides must be positive (dst %td, sst %td)", dst, sst);
  const size_t n = g.size();
  if (nelems == 0) return;
  const size_t count = bytes_of(nelems, n, call);  // elements per side
  const size_t dest_extent = bytes_of(bytes_of(count - 1, dst, call) + 1, elem, call);
  const size_t source_extent = bytes_of(bytes_of(count - 1, sst, call) + 1, elem, call);
  check_symmetric(rt, dest, dest_extent, call, "dest");
  check_symmetric(rt, source, source_extent, call, "source");
  check_disjoint(dest, dest_extent, source, source_extent, call);
  auto* d = static_cast<char*>(dest);
  auto* s = static_cast<const char*>(source);
  const size_t me = g.my_index;
  // Small blocks through the mailboxes (packed: element i of our block for member j is source
  // element (j * nelems + i) * sst), one wait per member instead of two barriers.
  const size_t block = bytes_of(nelems, elem, call);
  const auto pack = [&](int j, unsigned char* cell) {
    if (sst == 1) {
      std::memcpy(cell, s + j * block, block);
      return;
    }
    for (size_t i = 0; i < nelems; ++i)
      std::memcpy(cell + i * elem, s + (j * nelems + i) * sst * elem, elem);
  };
  const auto unpack = [&](int j, const unsigned char* v) {
    if (dst == 1) {
      std::memcpy(d + j * block, v, block);
      return;
    }
    for (size_t i = 0; i < nelems; ++i)
      std::memcpy(d + (j * nelems + i) * dst * elem, v + i * elem, elem);
  };
  if (n > 1 && flat_exchange(rt, g, block, pack, unpack, call)) return;
  if (n > 1 && dst == 1 && sst == 1 && alltoall_pushed(rt, g, d, s, block, call)) return;
  group_barrier(rt, g, call);
  for (size_t k = 0; k < n; ++k) {
    size_t j = (me + k) % n;
    if (dst == 1 && sst == 1) {
      rma_get(rt, d + j * nelems * elem, s + me * nelems * elem, nelems * elem, g.members[j], call);
      continue;
    }
    for (size_t i = 0; i < nelems; ++i) {
      rma_get(rt, d + (j * nelems + i) * dst * elem, s + (me * nelems + i) * sst * elem, elem,
              g.members[j], call);
    }
  }
  group_barrier(rt, g, call);
}

template <typename T, typename Op>
void reduce(Runtime& rt, const Group& g, T* dest, const T* source, size_t nreduce,
            const char* call) {
  using E = typename Elem<T>::type;
  static_assert(sizeof(E) == sizeof(T));
  const size_t bytes = bytes_of(nreduce, sizeof(T), call);
  if (bytes == 0) return;
  check_symmetric(rt, dest, bytes, call, "dest");
  check_same_or_disjoint(dest, source, bytes, call);
  group_reduce(rt, g, dest, source, nreduce, sizeof(T), combine<E, Op>, call);
}

}  // namespace

extern "C" {

int shmem_team_sync(shmem_team_t team) {
  Call c = team_call(team, "shmem_team_sync");
  group_barrier(c.rt, c.group, "shmem_team_sync");
  return 0;
}

#define VSHMEM_DEFINE_COLL(NAME, TYPE, ELEM)                                                      \
  int shmem_##NAME##_broadcast(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems,  \
                               int PE_root) {                                                     \
    constexpr const char* kCall = "shmem_" #NAME "_broadcast";                                    \
    Call c = team_call(team, kCall);                                                              \
    broadcast(c.rt, c.group, dest, source, nelems, ELEM, PE_root, true, kCall);                   \
    return 0;                                                                                     \
  }                                                                                               \
  int shmem_##NAME##_collect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) {  \
    constexpr const char* kCall = "shmem_" #NAME "_collect";                                      \
    Call c = team_call(team, kCall);                                                              \
    collect(c.rt, c.group, dest, source, nelems, ELEM, kCall);                                    \
    return 0;                                                                                     \
  }                                                                                               \
  int shmem_##NAME##_fcollect(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    constexpr const char* kCall = "shmem_" #NAME "_fcollect";                                     \
    Call c = team_call(team, kCall);                                                              \
    fcollect(c.rt, c.group, dest, source, nelems, ELEM, kCall);                                   \
    return 0;                                                                                     \
  }                                                                                               \
  int shmem_##NAME##_alltoall(shmem_team_t team, TYPE* dest, const TYPE* source, size_t nelems) { \
    constexpr const char* kCall = "shmem_" #NAME "_alltoall";                                     \
    Call c = team_call(team, kCall);                                                              \
    alltoalls(c.rt, c.group, dest, source, 1, 1, nelems, ELEM, kCall);                            \
    return 0;                                                                                     \
  }                                                                                               \
  int shmem_##NAME##_alltoalls(shmem_team_t team, TYPE* dest, const TYPE* source, ptrdiff_t dst,  \
                               ptrdiff_t sst, size_t nelems) {                                    \
    constexpr const char* kCall = "shmem_" #NAME "_alltoalls";                                    \
    Call c = team_call(team, kCall);                                                              \
    alltoalls(c.rt, c.group, dest, source, dst, sst, nelems, ELEM, kCall);                        \
    return 0;                                                                                     \
  }
#define VSHMEM_DEFINE_COLL_TYPED(NAME, TYPE) VSHMEM_DEFINE_COLL(NAME, TYPE, sizeof(TYPE))
VSHMEM_RMA_TYPES(VSHMEM_DEFINE_COLL_TYPED)

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems,
                       int PE_root) {
  Call c = team_call(team, "shmem_broadcastmem");
  broadcast(c.rt, c.group, dest, source, nelems, 1, PE_root, true, "shmem_broadcastmem");
  return 0;
}

int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  Call c = team_call(team, "shmem_collectmem");
  collect(c.rt, c.group, dest, source, nelems, 1, "shmem_collectmem");
  return 0;
}

int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  Call c = team_call(team, "shmem_fcollectmem");
  fcollect(c.rt, c.group, dest, source, nelems, 1, "shmem_fcollectmem");
  return 0;
}

int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  Call c = team_call(team, "shmem_alltoallmem");
  alltoalls(c.rt, c.group, dest, source, 1, 1, nelems, 1, "shmem_alltoallmem");
  return 0;
}

int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems) {
  Call c = team_call(team, "shmem_alltoallsmem");
  alltoalls(c.rt, c.group, dest, source, dst, sst, nelems, 1, "shmem_alltoallsmem");
  return 0;
}

#define VSHMEM_DEFINE_REDUCE(NAME, TYPE, OP, OPTYPE)                                  \
  int shmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE* dest, const TYPE* source, \
                                   size_t nreduce) {                                  \
    constexpr const char* kCall = "shmem_" #NAME "_" #OP "_reduce";                   \
    Call c = team_call(team, kCall);                                                  \
    reduce<TYPE, OPTYPE>(c.rt, c.group, dest, source, nreduce, kCall);                \
    return 0;                                                                         \
  }
#define VSHMEM_DEFINE_REDUCE_BITWISE(NAME, TYPE) \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, and, OpAnd)   \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, or, OpOr)     \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, xor, OpXor)
#define VSHMEM_DEFINE_REDUCE_MINMAX(NAME, TYPE) \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, max, OpMax)  \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, min, OpMin)
#define VSHMEM_DEFINE_REDUCE_ARITH(NAME, TYPE) \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, sum, OpSum) \
  VSHMEM_DEFINE_REDUCE(NAME, TYPE, prod, OpProd)
VSHMEM_REDUCE_BITWISE_TYPES(VSHMEM_DEFINE_REDUCE_BITWISE)
VSHMEM_REDUCE_MINMAX_TYPES(VSHMEM_DEFINE_REDUCE_MINMAX)
VSHMEM_REDUCE_ARITH_TYPES(VSHMEM_DEFINE_REDUCE_ARITH)

// --- deprecated active-set forms ---------------------------------------------------------------

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  constexpr const char* kCall = "shmem_barrier";
  Runtime& rt = runtime_for(kCall);
  Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);
  quiet(rt, kCall);
  group_barrier(rt, g, kCall);
}

void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  constexpr const char* kCall = "shmem_sync";
  Runtime& rt = runtime_for(kCall);
  group_barrier(rt, active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall), kCall);
}

#define VSHMEM_DEFINE_ACTIVE_SET_SIZED(BITS)                                               \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root,   \
                             int PE_start, int logPE_stride, int PE_size, long* pSync) {   \
    constexpr const char* kCall = "shmem_broadcast" #BITS;                                 \
    Runtime& rt = runtime_for(kCall);                                                      \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);               \
    broadcast(rt, g, dest, source, nelems, BITS / 8, PE_root, false, kCall);               \
  }                                                                                        \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start,    \
                           int logPE_stride, int PE_size, long* pSync) {                   \
    constexpr const char* kCall = "shmem_collect" #BITS;                                   \
    Runtime& rt = runtime_for(kCall);                                                      \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);               \
    collect(rt, g, dest, source, nelems, BITS / 8, kCall);                                 \
  }                                                                                        \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync) {                  \
    constexpr const char* kCall = "shmem_fcollect" #BITS;                                  \
    Runtime& rt = runtime_for(kCall);                                                      \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);               \
    fcollect(rt, g, dest, source, nelems, BITS / 8, kCall);                                \
  }                                                                                        \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start,   \
                            int logPE_stride, int PE_size, long* pSync) {                  \
    constexpr const char* kCall = "shmem_alltoall" #BITS;                                  \
    Runtime& rt = runtime_for(kCall);                                                      \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);               \
    alltoalls(rt, g, dest, source, 1, 1, nelems, BITS / 8, kCall);                         \
  }                                                                                        \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, \
                             size_t nelems, int PE_start, int logPE_stride, int PE_size,   \
                             long* pSync) {                                                \
    constexpr const char* kCall = "shmem_alltoalls" #BITS;                                 \
    Runtime& rt = runtime_for(kCall);                                                      \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);               \
    alltoalls(rt, g, dest, source, dst, sst, nelems, BITS / 8, kCall);                     \
  }
VSHMEM_DEFINE_ACTIVE_SET_SIZED(32)
VSHMEM_DEFINE_ACTIVE_SET_SIZED(64)

#define VSHMEM_DEFINE_TO_ALL(NAME, TYPE, OP, OPTYPE)                                           \
  void shmem_##NAME##_##OP##_to_all(TYPE* dest, const TYPE* source, int nreduce, int PE_start, \
                                    int logPE_stride, int PE_size, TYPE* pWrk, long* pSync) {  \
    constexpr const char* kCall = "shmem_" #NAME "_" #OP "_to_all";                            \
    Runtime& rt = runtime_for(kCall);                                                          \
    Group g = active_set(rt, PE_start, logPE_stride, PE_size, pSync, kCall);                   \
    if (pWrk == nullptr) fail(kCall, "pWrk is NULL");                                          \
    if (nreduce < 0) fail(kCall, "nreduce %d is negative", nreduce);                           \
    reduce<TYPE, OPTYPE>(rt, g, dest, source, static_cast<size_t>(nreduce), kCall);            \
  }
#define VSHMEM_DEFINE_TO_ALL_BITWISE(NAME, TYPE) \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, and, OpAnd)   \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, or, OpOr)     \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, xor, OpXor)
#define VSHMEM_DEFINE_TO_ALL_MINMAX(NAME, TYPE) \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, max, OpMax)  \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, min, OpMin)
#define VSHMEM_DEFINE_TO_ALL_ARITH(NAME, TYPE) \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, sum, OpSum) \
  VSHMEM_DEFINE_TO_ALL(NAME, TYPE, prod, OpProd)
VSHMEM_TO_ALL_BITWISE_TYPES(VSHMEM_DEFINE_TO_ALL_BITWISE)
VSHMEM_TO_ALL_MINMAX_TYPES(VSHMEM_DEFINE_TO_ALL_MINMAX)
VSHMEM_TO_ALL_ARITH_TYPES(VSHMEM_DEFINE_TO_ALL_ARITH)

}  // extern "C"
