// One node's job: vshmemrun starts the PEs itself and supervises them (vshmemrun.cpp says what
// the user sees). The steps, in order, each a method: prepare (job id, secret, the private socket
// directory, every PE's environment: all before the first fork), take the signals through a
// signalfd, start the PEs, then supervise until every PE is gone: forward their output, read
// their notices (shmem_init/finalize state, shmem_global_exit), judge their exits, stop the others
// after the first failure and kill what outlives the grace period.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace vshmem::launcher {

struct LocalJobSpec {
  int npes = 0;
  bool tag_output = false;
  double grace_s = 3.0;
  int simulate_nodes = 0;         // 0: the PEs see the real node
  std::string program;            // resolved path of the program
  std::vector<std::string> argv;  // program arguments, argv[0] included
};

class LocalJob {
 public:
  // Runs the job to its end; returns vshmemrun's exit status (the first failure's).
  static int run(const LocalJobSpec& spec);

 private:
  using Clock = std::chrono::steady_clock;

  struct OutputStream {
    int fd = -1;          // read end of the PE's pipe
    int target = 1;       // our stdout or stderr
    std::string partial;  // an unfinished line
  };
  struct Pe {
    pid_t pid = -1;
    bool running = false;
    bool in_shmem = false;  // between a successful shmem_init and the end of shmem_finalize
    OutputStream out, err;
    std::vector<std::string> env;  // built before any fork
  };
  struct Failure {
    int rank;
    int code;
  };
  struct GlobalExit {
    int rank;
    int status;
  };
  struct Exit {
    int rank;
    pid_t pid;
    int status;
  };

  explicit LocalJob(const LocalJobSpec& spec);
  ~LocalJob();

  // Job id, secret, private directory and every PE's environment. False (message printed) on
  // failure.
  bool prepare();
  // SIGCHLD, the termination signals and the PEs' notices through a signalfd.
  bool take_signals();
  // Forks and execs every PE; a failure stops the ones started.
  void start_pes();
  // The poll loop: output, signals, exits, the grace period. False when poll itself failed.
  bool supervise();
  int exit_status() const;

  void stop_all(int sig);
  void begin_stopping();
  int rank_of(pid_t pid) const;
  // Reads every pending signal: notices, and signals to forward.
  void handle_signals();
  // Reaps every PE that has exited, then judges them together.
  void reap();
  void judge(const Exit& e);
  void judge_global_exits();
  void kill_the_late();

  const LocalJobSpec& spec_;
  std::string dir_;  // the job's private directory; removed at the end
  std::vector<Pe> pes_;
  sigset_t old_mask_{};
  int signal_fd_ = -1;
  int running_ = 0;
  int exit_code_ = 0;
  bool stopping_ = false;
  Clock::time_point kill_at_{};
  int received_signal_ = 0;
  // The first failure decides the exit status and is the one named: a PE that then calls
  // shmem_global_exit in reaction (it saw the first one die) is not blamed.
  std::optional<Failure> first_failure_;
  std::vector<GlobalExit> global_exits_;  // notices read, judged after the exits reaped with them
};

}  // namespace vshmem::launcher
