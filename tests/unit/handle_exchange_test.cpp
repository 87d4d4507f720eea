// The handle exchange (runtime/ipc/handle_exchange.hpp), with threads as PEs: descriptors and
// fabric handles arrive owned, per sender, in order, and a peer that sent the wrong number of
// handles, or none because its export failed, is named without leaving the others waiting.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/common/private_dir.hpp"
#include "runtime/ipc/handle_exchange.hpp"

namespace vshmem {
namespace {

const char kSecret[] = "0123456789abcdef0123456789abcdef";

std::string fresh_job(const char* what) {
  return std::string(what) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::random_device{}() % 100000);
}

// An allgather among threads: slot i of the result is member i's bytes.
class ThreadAllgather {
 public:
  explicit ThreadAllgather(int n) : sync_(n), rows_(n) {}
  Status run(int index, const void* mine, void* all, size_t bytes) {
    rows_[index].assign(static_cast<const uint8_t*>(mine),
                        static_cast<const uint8_t*>(mine) + bytes);
    sync_.arrive_and_wait();
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].size() != bytes) return error(Code::kInvalidArgument, "sizes differ");
      std::memcpy(static_cast<uint8_t*>(all) + i * bytes, rows_[i].data(), bytes);
    }
    sync_.arrive_and_wait();  // nobody overwrites a row before everyone read it
    return Status::ok();
  }

 private:
  std::barrier<> sync_;
  std::vector<std::vector<uint8_t>> rows_;
};

// A memfd holding `bytes` of `data`, as a handle.
ShareableHandle memfd_with(const std::vector<uint8_t>& data) {
  int fd = memfd_create("handle_exchange_test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  return ShareableHandle::from_fd(fd);
}

std::vector<uint8_t> contents(int fd, size_t bytes) {
  std::vector<uint8_t> out(bytes, 0xEE);
  EXPECT_EQ(pread(fd, out.data(), bytes, 0), static_cast<ssize_t>(bytes));
  return out;
}

std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(HandleExchange, DescriptorsArriveOwnedPerSenderInOrder) {
  constexpr int kPes = 3;
  constexpr size_t kHandles = 2, kBytes = 64;
  const std::string job = fresh_job("hx-fd");
  auto dir = private_job_dir(job);
  ASSERT_TRUE(dir.is_ok()) << dir.status().message();
  std::mt19937_64 rng(std::random_device{}());
  // data[pe][i]: what PE pe's i-th descriptor holds.
  std::vector<std::vector<std::vector<uint8_t>>> data(kPes);
  for (auto& per_pe : data) {
    for (size_t i = 0; i < kHandles; ++i) per_pe.push_back(random_bytes(rng, kBytes));
  }
  std::vector<std::unique_ptr<FdExchange>> sockets(kPes);
  for (int pe = 0; pe < kPes; ++pe) {
    auto ex = FdExchange::create(*dir, job, kSecret, pe, std::chrono::seconds(10));
    ASSERT_TRUE(ex.is_ok()) << ex.status().message();
    sockets[pe] = std::move(ex).value();
  }
  std::vector<HandleExchange::Received> got(kPes);
  std::vector<Status> status(kPes);
  std::vector<std::thread> threads;
  for (int pe = 0; pe < kPes; ++pe) {
    threads.emplace_back([&, pe] {
      HandleExchange hx(sockets[pe].get(), pe);
      std::vector<ShareableHandle> mine;
      for (const auto& d : data[pe]) mine.push_back(memfd_with(d));
      std::vector<int> peers;
      for (int p = 0; p < kPes; ++p) {
        if (p != pe) peers.push_back(p);
      }
      auto r = hx.exchange(peers, mine, Status::ok(), kHandles, 5);
      if (r) {
        got[pe] = std::move(r).value();
      } else {
        status[pe] = r.status();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int> received_fds;
  for (int pe = 0; pe < kPes; ++pe) {
    ASSERT_TRUE(status[pe].is_ok()) << "PE " << pe << ": " << status[pe].message();
    ASSERT_EQ(got[pe].size(), static_cast<size_t>(kPes - 1));
    for (auto& [from, handles] : got[pe]) {
      ASSERT_NE(from, pe);
      ASSERT_EQ(handles.size(), kHandles);
      for (size_t i = 0; i < kHandles; ++i) {
        EXPECT_EQ(handles[i].kind(), HandleKind::kPosixFd);
        EXPECT_EQ(contents(handles[i].fd(), kBytes), data[from][i])
            << "PE " << pe << " from PE " << from << " handle " << i;
        received_fds.push_back(handles[i].fd());
      }
    }
  }
  // take: exactly the count asked for, else the sender is named.
  auto wrong = HandleExchange::take(got[0], 1, 3, "memory handle");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().message(), "PE 1 sent 2 memory handles, not 3");
  auto none = HandleExchange::take(got[0], 0, 1, "barrier page");
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().message(), "PE 0 sent no barrier page");
  auto right = HandleExchange::take(got[0], 2, kHandles, "memory handle");
  ASSERT_TRUE(right.is_ok()) << right.status().message();
  EXPECT_EQ(contents(right.value()[1].fd(), kBytes), data[2][1]);
  EXPECT_EQ(got[0].count(2), 0u);  // taken out
  // Whatever nobody took is closed with the map: no descriptor leaks.
  right = std::vector<ShareableHandle>{};
  got.clear();
  for (int fd : received_fds) EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "descriptor " << fd;
  sockets.clear();
  remove_private_dir(*dir);
}

TEST(HandleExchange, FabricHandlesThroughTheGroupsAllgather) {
  // A team-like group: members are world PEs 5, 2 and 7 in the allgather's order. PE 7 could not
  // export: it still takes part (nobody waits for it) and reports its own cause; the others find
  // nothing from it. PE 2 sends two handles, PE 5 one.
  const std::vector<int> members = {5, 2, 7};
  const size_t hb = ShareableHandle::kFabricBytes;
  std::mt19937_64 rng(std::random_device{}());
  std::vector<std::vector<std::vector<uint8_t>>> bytes(members.size());
  bytes[0] = {random_bytes(rng, hb)};
  bytes[1] = {random_bytes(rng, hb), random_bytes(rng, hb)};
  ThreadAllgather group(static_cast<int>(members.size()));
  std::vector<Result<HandleExchange::Received>> results;
  for (size_t i = 0; i < members.size(); ++i) {
    results.emplace_back(error(Code::kState, "did not run"));
  }
  std::vector<std::thread> threads;
  for (size_t idx = 0; idx < members.size(); ++idx) {
    threads.emplace_back([&, idx] {
      HandleExchange hx(
          HandleKind::kFabric, nullptr,
          [&, idx](const void* mine, void* all, size_t n) {
            return group.run(static_cast<int>(idx), mine, all, n);
          },
          members, members[idx]);
      std::vector<ShareableHandle> mine;
      for (const auto& b : bytes[idx]) mine.push_back(ShareableHandle::from_fabric(b.data()));
      Status exported = idx == 2 ? error(Code::kSystem, "export refused by the test") : Status();
      std::vector<int> peers;
      for (int m : members) {
        if (m != members[idx]) peers.push_back(m);
      }
      results[idx] = hx.exchange(peers, mine, exported, 2, 0);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(results[2].is_ok());
  EXPECT_EQ(results[2].status().message(), "export refused by the test");
  for (size_t idx = 0; idx < 2; ++idx) {
    ASSERT_TRUE(results[idx].is_ok()) << results[idx].status().message();
    auto& got = results[idx].value();
    auto from7 = HandleExchange::take(got, 7, 1, "memory handle");
    ASSERT_FALSE(from7.is_ok());
    EXPECT_EQ(from7.status().message(), "PE 7 sent no memory handle");
    const size_t other = 1 - idx;
    auto hs = HandleExchange::take(got, members[other], bytes[other].size(), "memory handle");
    ASSERT_TRUE(hs.is_ok()) << hs.status().message();
    for (size_t i = 0; i < bytes[other].size(); ++i) {
      EXPECT_EQ(hs.value()[i].kind(), HandleKind::kFabric);
      EXPECT_EQ(0, std::memcmp(hs.value()[i].fabric().data(), bytes[other][i].data(), hb))
          << "member " << idx << " from " << members[other] << " handle " << i;
    }
  }
}

TEST(HandleExchange, MoreHandlesThanAllowedFailOnlyTheSender) {
  // Fabric: the sender of too many handles takes part with none, so the group stays in step.
  ThreadAllgather group(2);
  std::mt19937_64 rng(std::random_device{}());
  const auto h = random_bytes(rng, ShareableHandle::kFabricBytes);
  std::vector<Result<HandleExchange::Received>> results;
  results.emplace_back(error(Code::kState, "did not run"));
  results.emplace_back(error(Code::kState, "did not run"));
  std::vector<std::thread> threads;
  for (int pe = 0; pe < 2; ++pe) {
    threads.emplace_back([&, pe] {
      HandleExchange hx(
          HandleKind::kFabric, nullptr,
          [&, pe](const void* mine, void* all, size_t n) { return group.run(pe, mine, all, n); },
          {0, 1}, pe);
      std::vector<ShareableHandle> mine;
      for (int i = 0; i < (pe == 0 ? 3 : 1); ++i)
        mine.push_back(ShareableHandle::from_fabric(h.data()));
      results[pe] = hx.exchange({1 - pe}, mine, Status::ok(), 2, 0);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(results[0].is_ok());
  EXPECT_EQ(results[0].status().message(), "3 handles to send, at most 2");
  ASSERT_TRUE(results[1].is_ok()) << results[1].status().message();
  EXPECT_EQ(results[1].value().at(0).size(), 0u);
}

TEST(HandleExchange, AFailedDescriptorExportReturnsBeforeAnyMessage) {
  // No sockets at all: a PE whose export failed never reaches them.
  HandleExchange hx(nullptr, 0);
  auto r = hx.exchange({1}, {}, error(Code::kSystem, "out of descriptors"), 1, 0);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "out of descriptors");
  // And one that would have to send without sockets says so.
  auto s = hx.exchange({1}, {}, Status::ok(), 1, 0);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), Code::kState);
}

}  // namespace
}  // namespace vshmem
