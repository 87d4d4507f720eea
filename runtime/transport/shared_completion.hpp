// What the UCX plugin's quiet() completes for every thread at once (the put messages'
// confirmations, the _nbi get messages): one completion at a time, and a quiet that finds nothing
// of its own to complete while another thread's completion is under way waits for that one (its
// thread's operations may be among those the other took). A completion that failed fails every
// later one too: the operations it gave up may have been another thread's (a failed quiet ends
// the job, so only tests/unit/shared_completion_test.cpp sees a later one). Header-only and free
// of any network type, as chunk_pipeline.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace vshmem {

class SharedCompletion {
 public:
  bool under_way() const { return running_.load(std::memory_order_seq_cst) != 0; }
  // Held for the whole of one completion, and counted before it takes the operations (quiet()
  // reads their count, then under_way()).
  class Turn {
   public:
    explicit Turn(SharedCompletion& c) : c_(c) {
      c_.running_.fetch_add(1, std::memory_order_seq_cst);
      c_.mutex_.lock();
    }
    ~Turn() {
      c_.mutex_.unlock();
      c_.running_.fetch_sub(1, std::memory_order_seq_cst);
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    // An earlier completion's failure (its code, and its text in err), or 0.
    int earlier_failure(char* err, size_t errlen) const {
      if (c_.failed_ == 0) return 0;
      if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", c_.failure_.c_str());
      return c_.failed_;
    }
    // This completion's result (code, and its text in err), kept when it is the first failure.
    int result(int code, const char* err) {
      if (code != 0 && c_.failed_ == 0) {
        c_.failed_ = code;
        c_.failure_ = err != nullptr ? err : "";
      }
      return code;
    }

   private:
    SharedCompletion& c_;
  };

 private:
  std::mutex mutex_;
  std::atomic<int> running_{0};
  int failed_ = 0;  // under mutex_
  std::string failure_;
};

}  // namespace vshmem
