// A job of N PEs as N threads of one process, for unit tests of the runtime's collective logic
// (VA agreement, heap growth, ...) without a launcher. Every PE's Bootstrap meets the others in
// one shared hub that checks, like the socket hub, that all PEs called the same collective
// (gather::Round's messages) and names the missing PEs at the deadline. Faults are injected per
// PE: a delay before every collective, or a death after k collectives (from then on the PE's
// calls fail at once and it never arrives, as if its process had gone).
//
// over_socket_hub() runs the same job over the real socket hub instead
// (runtime/bootstrap/socket_bootstrap.cpp, what vshmemrun's PEs use): every thread connects a
// SocketBootstrap to one abstract address, PE 0's being the hub, with the job's timeout. The
// same faults apply: a delay before each collective; a death closes the PE's connection (what the
// hub sees when a process dies) and fails its later calls; die_after(pe, 0) means the PE never
// connects.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/bootstrap/gather_round.hpp"
#include "runtime/bootstrap/socket_bootstrap.hpp"
#include "runtime/common/process_info.hpp"
#include "runtime/common/status.hpp"

namespace vshmem::testing {

class ThreadJob {
 public:
  ThreadJob(int npes, std::chrono::milliseconds timeout)
      : npes_(npes), timeout_(timeout), delay_(npes), dies_after_(npes, -1) {}

  int size() const { return npes_; }
  // PE pe waits `d` before each of its collectives.
  void delay(int pe, std::chrono::milliseconds d) { delay_[pe] = d; }
  // PE pe takes part in its first `k` collectives, then dies.
  void die_after(int pe, int k) { dies_after_[pe] = k; }
  // PE pe dies now: from its own thread only (its next collective fails).
  void die(int pe) { dies_after_[pe] = 0; }

  // The PEs meet in the socket hub (a fresh address, job id and secret) instead of the shared one.
  void over_socket_hub() {
    const auto hex = [](size_t bytes) {
      auto r = random_hex(bytes);
      return r.is_ok() ? *r : std::string();  // an empty secret: connect refuses it, naming why
    };
    socket_.address = "@vshmem-threads-" + hex(8);
    socket_.job_id = "threads-" + hex(4);
    socket_.secret = hex(detail::kSecretLength / 2);
    socket_.npes = npes_;
  }

  // Runs body(pe, bootstrap) on one thread per PE and returns what each returned.
  template <class R>
  std::vector<R> run(const std::function<R(int, Bootstrap&)>& body) {
    std::vector<R> out(npes_);
    std::vector<std::thread> threads;
    for (int pe = 0; pe < npes_; ++pe) {
      threads.emplace_back([this, pe, &out, &body] {
        if (!socket_.address.empty()) {
          SocketMember member(this, pe);
          out[pe] = body(pe, member);
        } else {
          Member member(this, pe);
          out[pe] = body(pe, member);
        }
      });
    }
    for (auto& t : threads) t.join();
    return out;
  }

 private:
  class Member final : public Bootstrap {
   public:
    Member(ThreadJob* job, int rank) : job_(job), rank_(rank) {}
    const char* name() const override { return "threads"; }
    int rank() const override { return rank_; }
    int size() const override { return job_->npes_; }
    Status allgather(const void* in, void* out, size_t bytes) override {
      return job_->collective(rank_, {gather::kAllgather, seq_++, bytes, 0}, in, out);
    }
    Status broadcast(void* buf, size_t bytes, int root) override {
      return job_->collective(rank_, {gather::kBroadcast, seq_++, bytes, root}, buf, buf);
    }
    Status barrier() override {
      return job_->collective(rank_, {gather::kBarrier, seq_++, 0, 0}, nullptr, nullptr);
    }

   private:
    ThreadJob* job_;
    int rank_;
    uint64_t seq_ = 0;
  };

  // A PE whose collectives go through its own SocketBootstrap.
  class SocketMember final : public Bootstrap {
   public:
    SocketMember(ThreadJob* job, int rank) : job_(job), rank_(rank) {
      if (job->dies_after_[rank] == 0) {
        broken_ = Status(Code::kPeerFailure,
                         "PE " + std::to_string(rank) + ": init: this PE never started (injected)");
        return;
      }
      detail::SocketConfig config = job->socket_;
      config.rank = rank;
      auto b = detail::SocketBootstrap::connect(config, job->timeout_);
      if (b.is_ok()) {
        socket_ = std::move(*b);
      } else {
        broken_ = b.status();
      }
    }
    const char* name() const override { return "socket threads"; }
    int rank() const override { return rank_; }
    int size() const override { return job_->npes_; }
    Status allgather(const void* in, void* out, size_t bytes) override {
      return call("allgather", [&] { return socket_->allgather(in, out, bytes); });
    }
    Status broadcast(void* buf, size_t bytes, int root) override {
      return call("broadcast", [&] { return socket_->broadcast(buf, bytes, root); });
    }
    Status barrier() override {
      return call("barrier", [&] { return socket_->barrier(); });
    }

   private:
    template <class F>
    Status call(const char* what, F&& f) {
      if (!broken_.is_ok()) return broken_;
      const int dies = job_->dies_after_[rank_];
      if (dies >= 0 && seq_ >= static_cast<uint64_t>(dies)) {
        socket_.reset();  // the hub sees the connection close, as when the process dies
        broken_ = Status(Code::kPeerFailure,
                         "PE " + std::to_string(rank_) + ": " + what + ": this PE died (injected)");
        return broken_;
      }
      ++seq_;
      if (job_->delay_[rank_].count() > 0) std::this_thread::sleep_for(job_->delay_[rank_]);
      return f();
    }

    ThreadJob* job_;
    int rank_;
    uint64_t seq_ = 0;
    std::unique_ptr<detail::SocketBootstrap> socket_;
    Status broken_ = Status::ok();
  };

  // One collective as the hub sees it: every PE's call and contribution.
  struct Meeting {
    std::vector<gather::Call> calls;
    std::vector<std::vector<char>> data;
    std::vector<bool> arrived;
    int count = 0;
    int left = 0;  // PEs that have not yet taken their result
  };

  Status collective(int rank, const gather::Call& call, const void* in, void* out) {
    const std::string what = "PE " + std::to_string(rank) + ": " + gather::describe(call) + ": ";
    if (dies_after_[rank] >= 0 && call.seq >= static_cast<uint64_t>(dies_after_[rank])) {
      return Status(Code::kPeerFailure, what + "this PE died (injected)");
    }
    if (delay_[rank].count() > 0) std::this_thread::sleep_for(delay_[rank]);
    std::unique_lock<std::mutex> lock(mu_);
    Meeting& m = meetings_[call.seq];
    if (m.calls.empty()) {
      m.calls.resize(npes_);
      m.data.resize(npes_);
      m.arrived.assign(npes_, false);
      m.left = npes_;
    }
    m.calls[rank] = call;
    const char* bytes = static_cast<const char*>(in);
    m.data[rank].assign(bytes, bytes + gather::contribution_bytes(call, rank));
    m.arrived[rank] = true;
    ++m.count;
    cv_.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    if (!cv_.wait_until(lock, deadline, [&] { return m.count == npes_; })) {
      std::vector<int> late;
      for (int r = 0; r < npes_; ++r) {
        if (!m.arrived[r]) late.push_back(r);
      }
      // The meeting stays: late PEs that do arrive find it, and time out in turn.
      return Status(Code::kTimeout, what + "timed out after " + gather::seconds(timeout_) +
                                        " waiting for PE" + (late.size() > 1 ? "s " : " ") +
                                        gather::pe_list(late));
    }
    Status result = Status::ok();
    gather::Round round(m.calls[0], npes_, m.data[0].data());
    for (int r = 1; r < npes_ && result.is_ok(); ++r) {
      if (!round.same(m.calls[r])) {
        result = Status(Code::kInvalidArgument, what + round.disagreement(r, m.calls[r]));
        break;
      }
      size_t n = gather::contribution_bytes(m.calls[r], r);
      if (n > 0) std::memcpy(round.slot(r), m.data[r].data(), n);
    }
    if (result.is_ok() && round.result_len() > 0) {
      std::memcpy(out, round.result(), round.result_len());
    }
    if (--m.left == 0) meetings_.erase(call.seq);
    return result;
  }

  const int npes_;
  const std::chrono::milliseconds timeout_;
  std::vector<std::chrono::milliseconds> delay_;
  std::vector<int> dies_after_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Meeting> meetings_;
  detail::SocketConfig socket_;  // address set: over the socket hub
};

}  // namespace vshmem::testing
