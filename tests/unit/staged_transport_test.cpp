// The staged transport in one process: two "PEs" (two transports, each serving its own host
// heap) talk over loopback TCP. Data movement, chunking, atomics, the job-secret check, bad
// offsets, time limits, a dead peer, and that nothing (fd, thread) outlives the transport.
#include "runtime/transport/staged_transport.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vshmem {
namespace {

using namespace std::chrono_literals;

constexpr size_t kHeapBytes = 8 << 20;
constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

int count_entries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

struct Pe {
  std::vector<uint64_t> heap = std::vector<uint64_t>(kHeapBytes / 8);
  std::unique_ptr<StagedTransport> transport;
  uint8_t* base() { return reinterpret_cast<uint8_t*>(heap.data()); }
};

class StagedTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    provider_ = make_host_provider();
    ASSERT_TRUE(provider_);
    for (int p = 0; p < 2; ++p) start(p, kSecret, 5000ms);
    connect_all();
  }

  void start(int p, const std::string& secret, std::chrono::milliseconds timeout) {
    StagedOptions o;
    o.my_pe = p;
    o.n_pes = 2;
    o.secret = secret;
    o.timeout = timeout;
    o.provider = provider_.get();
    o.heap_base = reinterpret_cast<uintptr_t>(pes_[p].base());
    o.heap_size = kHeapBytes;
    o.committed = kHeapBytes;
    o.address = "127.0.0.1";
    auto t = StagedTransport::start(o);
    ASSERT_TRUE(t) << t.status().message();
    pes_[p].transport = std::move(t).value();
  }

  void connect_all() {
    std::vector<StagedEndpoint> eps{pes_[0].transport->endpoint(), pes_[1].transport->endpoint()};
    for (Pe& pe : pes_) pe.transport->set_endpoints(eps);
  }

  std::unique_ptr<MemoryProvider> provider_;
  Pe pes_[2];
  std::mt19937_64 rng_{std::random_device{}()};
};

TEST_F(StagedTransportTest, PutAndGetMoveFreshDataAcrossChunkBoundaries) {
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{4096}, StagedTransport::kChunkBytes,
                       StagedTransport::kChunkBytes + 13, 3 * StagedTransport::kChunkBytes + 5}) {
    const size_t offset = 3 + bytes % 64;
    std::vector<uint8_t> src(bytes), back(bytes, 0xA5);
    for (auto& b : src) b = static_cast<uint8_t>(rng_());
    std::memset(pes_[1].base(), 0x5A, offset + bytes + 1);  // poison the target
    // PE 0 names its own copy of the symmetric address; it lands at the same offset on PE 1.
    Status st = pes_[0].transport->put(1, pes_[0].base() + offset, src.data(), bytes);
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(std::memcmp(pes_[1].base() + offset, src.data(), bytes), 0) << bytes;
    EXPECT_EQ(pes_[1].base()[offset + bytes], 0x5A) << "wrote past the end, " << bytes;
    EXPECT_EQ(pes_[1].base()[offset - 1], 0x5A) << "wrote before the start, " << bytes;
    st = pes_[0].transport->get(1, back.data(), pes_[0].base() + offset, bytes);
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(back, src) << bytes;
  }
}

TEST_F(StagedTransportTest, AtomicsFetchAndUpdateTheTargetsWord) {
  const uint64_t start = rng_(), add = rng_();
  pes_[1].heap[10] = start;
  AtomicRequest r{AtomicOp::kFetchAdd, &pes_[0].heap[10], 8, add, 0};
  uint64_t fetched = 0;
  ASSERT_TRUE(pes_[0].transport->atomic(1, r, &fetched));
  EXPECT_EQ(fetched, start);
  EXPECT_EQ(pes_[1].heap[10], start + add);
  AtomicRequest cas{AtomicOp::kCompareSwap, &pes_[0].heap[10], 8, 7, start + add};
  ASSERT_TRUE(pes_[0].transport->atomic(1, cas, &fetched));
  EXPECT_EQ(fetched, start + add);
  EXPECT_EQ(pes_[1].heap[10], 7u);
  // 4-byte atomics touch 4 bytes only.
  pes_[1].heap[11] = ~uint64_t{0};
  auto* word = reinterpret_cast<uint32_t*>(&pes_[0].heap[11]);
  AtomicRequest set{AtomicOp::kSet, word, 4, 0x12345678u, 0};
  ASSERT_TRUE(pes_[0].transport->atomic(1, set, nullptr));
  EXPECT_EQ(pes_[1].heap[11], 0xFFFFFFFF12345678ull);
}

TEST_F(StagedTransportTest, ConcurrentCallersShareOneConnection) {
  pes_[1].heap[0] = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        AtomicRequest r{AtomicOp::kFetchAdd, &pes_[0].heap[0], 8, 1, 0};
        EXPECT_TRUE(pes_[0].transport->atomic(1, r, nullptr));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(pes_[1].heap[0], 800u);
}

// A hello as a forger would send it (the wire layout of staged_transport.cpp).
struct ForgedHello {
  uint32_t magic = 0x48485356;
  uint32_t version = 1;
  int32_t from_pe = 0;
  uint32_t reserved = 0;
  char secret[64] = {};
};

TEST_F(StagedTransportTest, AWrongSecretIsRejected) {
  const StagedEndpoint ep = pes_[1].transport->endpoint();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = ep.address;
  sa.sin_port = ep.port;
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0) << strerror(errno);
  ForgedHello hello;
  std::string guess(32, '0');
  std::memcpy(hello.secret, guess.data(), guess.size());
  ASSERT_EQ(send(fd, &hello, sizeof(hello), 0), static_cast<ssize_t>(sizeof(hello)));
  // The proxy drops the connection instead of answering.
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1) << "the proxy neither answered nor closed";
  char reply[8];
  EXPECT_LE(recv(fd, reply, sizeof(reply), 0), 0) << "a forged hello was answered";
  close(fd);

  // A transport of another job (other secret) gets an error naming the PE.
  Pe stranger;
  StagedOptions o;
  o.my_pe = 0;
  o.n_pes = 2;
  o.secret = "ffffffffffffffffffffffffffffffff";
  o.timeout = 5000ms;
  o.provider = provider_.get();
  o.heap_base = reinterpret_cast<uintptr_t>(stranger.base());
  o.heap_size = kHeapBytes;
  o.committed = kHeapBytes;
  o.address = "127.0.0.1";
  auto t = StagedTransport::start(o);
  ASSERT_TRUE(t);
  (*t)->set_endpoints({(*t)->endpoint(), ep});
  uint64_t v = 1;
  Status st = (*t)->put(1, stranger.base(), &v, sizeof(v));
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("put to PE 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("refused the connection"), std::string::npos) << st.message();

  // The proxy still serves the job's own PEs.
  v = rng_();
  ASSERT_TRUE(pes_[0].transport->put(1, pes_[0].base() + 64, &v, sizeof(v)));
  EXPECT_EQ(pes_[1].heap[8], v);
}

TEST_F(StagedTransportTest, RequestsOutsideTheHeapAreRefusedAndNothingIsWritten) {
  std::vector<uint8_t> src(64, 0xEE);
  // Runs past the end of the heap (the client names a range the proxy must refuse).
  Status st = pes_[0].transport->put(1, pes_[0].base() + kHeapBytes - 8, src.data(), src.size());
  EXPECT_FALSE(st);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("outside the symmetric heap"), std::string::npos) << st.message();
  EXPECT_NE(pes_[1].base()[kHeapBytes - 8], 0xEE);
  // Misaligned atomic.
  AtomicRequest bad{AtomicOp::kFetchAdd, pes_[0].base() + 3, 8, 1, 0};
  st = pes_[0].transport->atomic(1, bad, nullptr);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("atomic on PE 1"), std::string::npos) << st.message();
  // The connection is still in sync afterwards.
  uint64_t v = rng_();
  ASSERT_TRUE(pes_[0].transport->put(1, pes_[0].base() + 8, &v, sizeof(v)));
  EXPECT_EQ(pes_[1].heap[1], v);
}

// Several chunks are in flight at once: when the proxy refuses some of them (here the last ones
// run past the end of the heap), the call fails with the refusal, the chunks before were
// delivered, and the replies still in flight are read so that the connection stays in step.
TEST_F(StagedTransportTest, ARefusedChunkOfAPipelinedTransferLeavesTheConnectionInStep) {
  constexpr size_t kChunk = StagedTransport::kChunkBytes;
  const size_t bytes = 4 * kChunk + 100;
  const size_t offset = kHeapBytes - (2 * kChunk + 50);  // chunks 0 and 1 fit, 2 and 3 do not
  std::vector<uint8_t> src(bytes), back(bytes, 0xA5);
  for (auto& b : src) b = static_cast<uint8_t>(rng_());
  std::memset(pes_[1].base() + offset, 0x5A, kHeapBytes - offset);
  Status st = pes_[0].transport->put(1, pes_[0].base() + offset, src.data(), bytes);
  EXPECT_FALSE(st);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("outside the symmetric heap"), std::string::npos) << st.message();
  EXPECT_EQ(std::memcmp(pes_[1].base() + offset, src.data(), 2 * kChunk), 0)
      << "the chunks before the refused ones were not delivered";
  EXPECT_EQ(pes_[1].base()[kHeapBytes - 1], 0x5A) << "a refused chunk was written";
  st = pes_[0].transport->get(1, back.data(), pes_[0].base() + offset, bytes);
  EXPECT_FALSE(st);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(std::memcmp(back.data(), src.data(), 2 * kChunk), 0);
  // In step: a transfer of several chunks and an atomic afterwards work.
  std::vector<uint8_t> again(3 * kChunk + 7), check(again.size());
  for (auto& b : again) b = static_cast<uint8_t>(rng_());
  ASSERT_TRUE(pes_[0].transport->put(1, pes_[0].base() + 64, again.data(), again.size()));
  ASSERT_TRUE(pes_[0].transport->get(1, check.data(), pes_[0].base() + 64, check.size()));
  EXPECT_EQ(check, again);
  uint64_t old = 0;
  AtomicRequest add{AtomicOp::kFetchAdd, &pes_[0].heap[0], 8, 5, 0};
  pes_[1].heap[0] = 37;
  ASSERT_TRUE(pes_[0].transport->atomic(1, add, &old));
  EXPECT_EQ(old, 37u);
  EXPECT_EQ(pes_[1].heap[0], 42u);
}

TEST_F(StagedTransportTest, MemoryBeyondTheCommittedPartIsRefusedAfterTheTimeLimit) {
  pes_[1].transport.reset();
  start(1, kSecret, 200ms);
  connect_all();
  pes_[1].transport->set_committed(4096);
  uint64_t v = 1;
  Status st = pes_[0].transport->put(1, pes_[0].base() + 8192, &v, sizeof(v));
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("allocated"), std::string::npos) << st.message();
  pes_[1].transport->set_committed(kHeapBytes);  // the heap grew: now it is served
  EXPECT_TRUE(pes_[0].transport->put(1, pes_[0].base() + 8192, &v, sizeof(v)));
}

TEST_F(StagedTransportTest, ASilentPeerTimesOutNamingThePeAndTheCall) {
  // A socket that accepts connections (the kernel does) but never answers: a hung PE.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  pes_[0].transport.reset();
  start(0, kSecret, 300ms);
  pes_[0].transport->set_endpoints(
      {pes_[0].transport->endpoint(), {sa.sin_addr.s_addr, sa.sin_port, 0}});
  uint64_t v = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = pes_[0].transport->get(1, &v, pes_[0].base(), sizeof(v));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(st);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.message();
  EXPECT_NE(st.message().find("get from PE 1"), std::string::npos) << st.message();
  EXPECT_LT(took, 5s);
  // The broken connection keeps reporting instead of reading a stale reply.
  st = pes_[0].transport->get(1, &v, pes_[0].base(), sizeof(v));
  EXPECT_NE(st.message().find("failed earlier"), std::string::npos) << st.message();
  close(fd);
}

TEST_F(StagedTransportTest, ADeadPeerGivesAnErrorNamingIt) {
  uint64_t v = rng_();
  ASSERT_TRUE(pes_[0].transport->put(1, pes_[0].base(), &v, sizeof(v)));  // connected
  pes_[1].transport.reset();                                              // PE 1 is gone
  Status st = pes_[0].transport->put(1, pes_[0].base(), &v, sizeof(v));
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("put to PE 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("PE 1 exited or failed"), std::string::npos) << st.message();
}

TEST(StagedTransportLifetime, NothingOutlivesTheTransport) {
  auto provider = make_host_provider();
  std::vector<uint64_t> heap(4096);
  const int fds = count_entries("/proc/self/fd"), threads = count_entries("/proc/self/task");
  {
    StagedOptions o;
    o.secret = kSecret;
    o.timeout = 2000ms;
    o.provider = provider.get();
    o.heap_base = reinterpret_cast<uintptr_t>(heap.data());
    o.heap_size = o.committed = heap.size() * 8;
    o.address = "127.0.0.1";
    o.n_pes = 2;
    auto a = StagedTransport::start(o);
    o.my_pe = 1;
    auto b = StagedTransport::start(o);
    ASSERT_TRUE(a && b);
    (*a)->set_endpoints({(*a)->endpoint(), (*b)->endpoint()});
    uint64_t v = 5;
    ASSERT_TRUE((*a)->put(1, heap.data(), &v, sizeof(v)));
    EXPECT_GT(count_entries("/proc/self/fd"), fds);
  }
  EXPECT_EQ(count_entries("/proc/self/fd"), fds);
  EXPECT_EQ(count_entries("/proc/self/task"), threads);
}

TEST(StagedTransportOptions, AMalformedAddressIsAClearError) {
  auto provider = make_host_provider();
  std::vector<uint64_t> heap(512);
  StagedOptions o;
  o.secret = kSecret;
  o.timeout = 1000ms;
  o.provider = provider.get();
  o.heap_base = reinterpret_cast<uintptr_t>(heap.data());
  o.heap_size = o.committed = heap.size() * 8;
  o.address = "localhost:99";
  auto t = StagedTransport::start(o);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("VSHMEM_STAGED_ADDR: 'localhost:99'"), std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace vshmem
