// vshmemrun, run as a separate process the way users run it: exit status propagation, stopping
// the other PEs when one fails, stdin to PE 0, --tag-output, the environment of the PEs, signal
// forwarding, no orphans, usage errors, and the command of the multi-node hand-off.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  int status = -1;  // exit code, or 128+signal
  std::string out, err;
  double seconds = 0;
};

// Runs vshmemrun with args; stdin gets `input`; env entries "K=V" are set, "K" alone unset.
// `during` runs while vshmemrun runs (given its pid), once its standard output holds
// `during_after_lines` lines: the PEs have started (under a sanitizer on a loaded machine that
// took more than the 700 ms these tests used to wait, and the signal reached PEs that had not yet
// printed their pid).
Run vshmemrun(const std::vector<std::string>& args, const std::string& input = "",
              const std::vector<std::string>& env = {},
              const std::function<void(pid_t)>& during = nullptr, size_t during_after_lines = 0,
              double limit_s = 30) {
  int in[2], out[2], err[2];
  EXPECT_EQ(pipe(in), 0);
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  const auto start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    for (const std::string& e : env) {
      size_t eq = e.find('=');
      if (eq == std::string::npos) {
        unsetenv(e.c_str());
      } else {
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
    }
    std::vector<char*> argv{const_cast<char*>(VSHMEMRUN_PATH)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(126);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  (void)!write(in[1], input.data(), input.size());
  close(in[1]);
  bool during_done = !during;
  const auto run_during = [&](const std::string& out) {
    if (during_done ||
        static_cast<size_t>(std::count(out.begin(), out.end(), '\n')) < during_after_lines) {
      return;
    }
    during_done = true;
    during(pid);
  };
  Run r;
  run_during(r.out);
  std::vector<pollfd> pfds{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    // In seconds: the difference alone would be a duration of nanoseconds, whose count times 1000
    // overflows poll's int (a negative time-out: poll waited for ever, and this limit never
    // fired; Clang's UndefinedBehaviorSanitizer reports the conversion).
    const std::chrono::duration<double> left =
        std::chrono::duration<double>(limit_s) - (Clock::now() - start);
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      r.err += "<vshmemrun did not finish within the test's limit>";
      break;
    }
    poll(pfds.data(), 2, static_cast<int>(left.count() * 1000) + 1);
    for (int i = 0; i < 2; ++i) {
      if (pfds[i].fd < 0 || !pfds[i].revents) continue;
      char buf[4096];
      ssize_t n = read(pfds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, n);
        if (i == 0) run_during(r.out);
      } else {
        close(pfds[i].fd);
        pfds[i].fd = -1;
        --open;
      }
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

const std::string kHelper = LAUNCHER_HELPER_PATH;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // A zombie nobody reaped yet is gone too.
  std::string stat;
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return true;
  char buf[512] = {};
  (void)!fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  const char* close_paren = strrchr(buf, ')');
  return close_paren != nullptr && close_paren[2] == 'Z';
}

std::vector<pid_t> pids_in(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("pid ");
    if (at != std::string::npos) pids.push_back(std::stoi(line.substr(at + 4)));
  }
  return pids;
}

TEST(Vshmemrun, EveryPeGetsItsEnvironment) {
  auto r = vshmemrun({"-n", "3", "--tag-output", kHelper, "env"}, "", {"VSHMEM_DEVICE"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> jobs;
  for (int pe = 0; pe < 3; ++pe) {
    std::string p = std::to_string(pe);
    EXPECT_TRUE(
        has(r.out, "[PE " + p + "] rank=" + p + " npes=3 local_rank=" + p + " local_size=3 "))
        << r.out;
  }
  EXPECT_TRUE(has(r.out, "bootstrap=socket")) << r.out;
  if (access("/dev/nvidiactl", F_OK) != 0) {
    EXPECT_TRUE(has(r.out, "device=<unset>")) << "no GPU here, so no VSHMEM_DEVICE\n" << r.out;
  }
  // A user's own choice of device is left alone.
  auto u = vshmemrun({"-n", "2", kHelper, "env"}, "", {"VSHMEM_DEVICE=7"});
  EXPECT_EQ(u.status, 0);
  EXPECT_FALSE(has(u.out, "device=0")) << u.out;
  EXPECT_TRUE(has(u.out, "device=7")) << u.out;
}

// --simulate-nodes K: PE r of N gets VSHMEM_NODE_ID=sim<r*K/N>; a user's own VSHMEM_NODE_ID is
// left alone. The PEs run env(1).
TEST(Vshmemrun, SimulateNodesGivesEachPeItsNode) {
  auto r = vshmemrun({"-n", "3", "--simulate-nodes", "2", "--tag-output", "env"}, "",
                     {"VSHMEM_NODE_ID"});
  ASSERT_EQ(r.status, 0) << r.err;
  const char* node[] = {"sim0", "sim0", "sim1"};
  for (int pe = 0; pe < 3; ++pe) {
    std::string tag = "[PE " + std::to_string(pe) + "] ";
    EXPECT_TRUE(has(r.out, tag + "VSHMEM_NODE_ID=" + node[pe] + "\n")) << r.out;
  }
  auto four = vshmemrun({"-n", "4", "--simulate-nodes", "4", "--tag-output", "env"}, "",
                        {"VSHMEM_NODE_ID"});
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_TRUE(has(four.out, "[PE 3] VSHMEM_NODE_ID=sim3\n")) << four.out;
  auto user = vshmemrun({"-n", "2", "--simulate-nodes", "2", "env"}, "", {"VSHMEM_NODE_ID=mine"});
  ASSERT_EQ(user.status, 0) << user.err;
  EXPECT_FALSE(has(user.out, "=sim")) << user.out;
  EXPECT_TRUE(has(user.out, "VSHMEM_NODE_ID=mine")) << user.out;
  auto plain = vshmemrun({"-n", "2", "env"}, "", {"VSHMEM_NODE_ID"});
  EXPECT_FALSE(has(plain.out, "VSHMEM_NODE_ID")) << plain.out;
  auto too_many = vshmemrun({"-n", "2", "--simulate-nodes", "3", "env"});
  EXPECT_EQ(too_many.status, 2);
  EXPECT_TRUE(has(too_many.err, "--simulate-nodes 3: more nodes than the 2 PEs")) << too_many.err;
  auto zero = vshmemrun({"-n", "2", "--simulate-nodes", "0", "env"});
  EXPECT_EQ(zero.status, 2);
  EXPECT_TRUE(has(zero.err, "expected a positive number of nodes")) << zero.err;
}

// PEs on several nodes load their kernels eagerly (a lazy first launch can deadlock with a remote
// PE: runtime/memory/memory.hpp), unless the user chose; one node keeps CUDA's default.
TEST(Vshmemrun, PesOnSeveralNodesLoadKernelsEagerly) {
  auto sim = vshmemrun({"-n", "3", "--simulate-nodes", "2", "--tag-output", "env"}, "",
                       {"CUDA_MODULE_LOADING"});
  ASSERT_EQ(sim.status, 0) << sim.err;
  for (int pe = 0; pe < 3; ++pe) {
    EXPECT_TRUE(has(sim.out, "[PE " + std::to_string(pe) + "] CUDA_MODULE_LOADING=EAGER\n"))
        << sim.out;
  }
  auto user =
      vshmemrun({"-n", "2", "--simulate-nodes", "2", "env"}, "", {"CUDA_MODULE_LOADING=LAZY"});
  ASSERT_EQ(user.status, 0) << user.err;
  EXPECT_FALSE(has(user.out, "CUDA_MODULE_LOADING=EAGER")) << user.out;
  EXPECT_TRUE(has(user.out, "CUDA_MODULE_LOADING=LAZY")) << user.out;
  for (const char* nodes : {"0", "1"}) {
    std::vector<std::string> args{"-n", "2"};
    if (nodes[0] != '0') args.insert(args.end(), {"--simulate-nodes", nodes});
    args.push_back("env");
    auto one = vshmemrun(args, "", {"CUDA_MODULE_LOADING"});
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_FALSE(has(one.out, "CUDA_MODULE_LOADING")) << one.out;
  }
  auto mpi = vshmemrun({"-n", "4", "--hosts", "a,b", "--dry-run", "./app"}, "",
                       {"SLURM_JOB_ID", "CUDA_MODULE_LOADING"});
  ASSERT_EQ(mpi.status, 0) << mpi.err;
  EXPECT_TRUE(has(mpi.out, "-x CUDA_MODULE_LOADING=EAGER ")) << mpi.out;
  auto mpi_user = vshmemrun({"-n", "4", "--hosts", "a,b", "--dry-run", "./app"}, "",
                            {"SLURM_JOB_ID", "CUDA_MODULE_LOADING=LAZY"});
  ASSERT_EQ(mpi_user.status, 0) << mpi_user.err;
  EXPECT_TRUE(has(mpi_user.out, "-x CUDA_MODULE_LOADING ")) << mpi_user.out;
  auto slurm = vshmemrun({"-n", "4", "--hosts", "a,b", "--dry-run", "./app"}, "",
                         {"SLURM_JOB_ID=42", "CUDA_MODULE_LOADING"});
  ASSERT_EQ(slurm.status, 0) << slurm.err;
  EXPECT_TRUE(has(slurm.out, "CUDA_MODULE_LOADING=EAGER")) << slurm.out;
}

TEST(Vshmemrun, ExitStatusOfTheFailingPeAndTheOthersAreStopped) {
  const int code = 3 + std::random_device{}() % 100;
  auto r = vshmemrun({"-n", "4", kHelper, "exit", "2", std::to_string(code)});
  EXPECT_EQ(r.status, code) << r.err;
  EXPECT_TRUE(has(r.err, "PE 2 (pid ")) << r.err;
  EXPECT_TRUE(has(r.err, "exited with status " + std::to_string(code) + "; stopping the other PEs"))
      << r.err;
  EXPECT_LT(r.seconds, 5) << "the sleeping PEs were not stopped";
}

TEST(Vshmemrun, PeKilledBySignalGives128PlusSignal) {
  auto r = vshmemrun({"-n", "3", kHelper, "signal", "1", std::to_string(SIGSEGV)});
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  EXPECT_TRUE(has(r.err, "PE 1")) << r.err;
  EXPECT_TRUE(has(r.err, "killed by signal " + std::to_string(SIGSEGV))) << r.err;
  EXPECT_LT(r.seconds, 5);
}

TEST(Vshmemrun, PesThatIgnoreSigtermAreKilledAfterTheGracePeriod) {
  auto r = vshmemrun({"-n", "3", "--grace", "0.5", kHelper, "stubborn", "0", "9"});
  EXPECT_EQ(r.status, 9) << r.err;
  EXPECT_TRUE(has(r.err, "did not stop within 0.5 s")) << r.err;
  EXPECT_LT(r.seconds, 5);
}

TEST(Vshmemrun, AllSucceedingExitsZero) {
  auto r = vshmemrun({"-n", "2", "--", kHelper, "lines", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(Vshmemrun, StdinGoesToPeZeroOnly) {
  const std::string line = "hello " + std::to_string(std::random_device{}());
  auto r = vshmemrun({"-n", "3", "--tag-output", kHelper, "stdin"}, line + "\nmore\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      has(r.out, "[PE 0] read " + std::to_string(line.size() + 6) + " bytes: '" + line + "'"))
      << r.out;
  EXPECT_TRUE(has(r.out, "[PE 1] read 0 bytes: ''")) << r.out;
  EXPECT_TRUE(has(r.out, "[PE 2] read 0 bytes: ''")) << r.out;
}

TEST(Vshmemrun, TagOutputPrefixesEveryLine) {
  auto r = vshmemrun({"-n", "2", "--tag-output", kHelper, "lines", "50"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream out(r.out), err(r.err);
  std::string l;
  int n_out = 0, n_err = 0;
  while (std::getline(out, l)) {
    EXPECT_TRUE(l.rfind("[PE 0] ", 0) == 0 || l.rfind("[PE 1] ", 0) == 0) << l;
    if (l.find(" out ") != std::string::npos) {
      // The tag matches the PE that wrote the line.
      EXPECT_EQ(l.substr(4, 1), l.substr(l.size() - 1)) << l;
    }
    ++n_out;
  }
  while (std::getline(err, l)) {
    EXPECT_TRUE(l.rfind("[PE 0] err", 0) == 0 || l.rfind("[PE 1] err", 0) == 0) << l;
    ++n_err;
  }
  EXPECT_EQ(n_out, 2 * 51);  // 50 lines + the unterminated one, per PE
  EXPECT_EQ(n_err, 2 * 50);
  EXPECT_TRUE(has(r.out, "[PE 1] no newline at the end\n")) << r.out;
}

// Runs n PEs of the helper's "sleep" mode (each prints its pid, then sleeps) and sends vshmemrun
// `sig` once every PE has printed its pid.
Run signal_sleeping_pes(int n, int sig) {
  return vshmemrun(
      {"-n", std::to_string(n), "--tag-output", kHelper, "sleep"}, "", {},
      [sig](pid_t pid) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        kill(pid, sig);
      },
      static_cast<size_t>(n));
}

TEST(Vshmemrun, SigtermIsForwardedAndNothingIsLeftBehind) {
  std::string seen;
  auto r = signal_sleeping_pes(3, SIGTERM);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
  EXPECT_TRUE(has(r.err, "forwarding it to the PEs")) << r.err;
  auto pids = pids_in(r.out);
  EXPECT_EQ(pids.size(), 3u) << r.out;
  for (pid_t p : pids) EXPECT_TRUE(process_gone(p)) << "PE pid " << p << " survived";
}

TEST(Vshmemrun, PesDieWithAKilledLauncher) {
  // Orphans are re-parented to us, so we can reap them and see that they died.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  auto r = signal_sleeping_pes(2, SIGKILL);
  EXPECT_EQ(r.status, 128 + SIGKILL);
  auto pids = pids_in(r.out);
  EXPECT_EQ(pids.size(), 2u) << r.out;
  for (pid_t p : pids) {
    int st = 0;
    pid_t got = -1;
    for (int i = 0; i < 50 && got != p; ++i) {
      got = waitpid(p, &st, WNOHANG);
      if (got != p) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(got, p) << "PE pid " << p << " outlived vshmemrun";
    if (got == p) {
      EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Vshmemrun, UsageErrorsExitTwo) {
  auto no_n = vshmemrun({kHelper, "env"});
  EXPECT_EQ(no_n.status, 2);
  EXPECT_TRUE(has(no_n.err, "-n N is required")) << no_n.err;
  auto bad_n = vshmemrun({"-n", "zero", kHelper});
  EXPECT_EQ(bad_n.status, 2);
  EXPECT_TRUE(has(bad_n.err, "-n 'zero': expected a positive number of PEs")) << bad_n.err;
  auto zero_n = vshmemrun({"-n", "0", kHelper});
  EXPECT_EQ(zero_n.status, 2);
  auto missing = vshmemrun({"-n", "2", "no-such-program-" + std::to_string(getpid())});
  EXPECT_EQ(missing.status, 2);
  EXPECT_TRUE(has(missing.err, "not found")) << missing.err;
  auto unknown = vshmemrun({"-n", "2", "--frobnicate", kHelper});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_TRUE(has(unknown.err, "unknown option '--frobnicate'")) << unknown.err;
  auto help = vshmemrun({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(has(help.out, "usage: vshmemrun -n N")) << help.out;
}

TEST(Vshmemrun, DryRunHandsSeveralNodesToMpirunWithThePmixBootstrap) {
  auto r =
      vshmemrun({"-n", "4", "--hosts", "nodea,nodeb", "-ppn", "2", "--dry-run", "./app", "x y"}, "",
                {"SLURM_JOB_ID", "VSHMEM_TEST_MARK=1", "SHMEM_SYMMETRIC_SIZE=1G",
                 "VSHMEM_SOCKET_ADDR=@leak"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.rfind("mpirun -np 4 ", 0) == 0 || r.out.rfind("prterun -np 4 ", 0) == 0)
      << r.out;
  EXPECT_TRUE(has(r.out, "--host nodea:2,nodeb:2")) << r.out;
  EXPECT_TRUE(has(r.out, "--map-by ppr:2:node")) << r.out;
  EXPECT_TRUE(has(r.out, "-x VSHMEM_BOOTSTRAP=pmix")) << r.out;
  EXPECT_TRUE(has(r.out, "-x VSHMEM_TEST_MARK")) << r.out;
  EXPECT_TRUE(has(r.out, "-x SHMEM_SYMMETRIC_SIZE")) << r.out;
  EXPECT_FALSE(has(r.out, "VSHMEM_SOCKET_ADDR")) << "vshmemrun's own variables must not travel";
  EXPECT_TRUE(has(r.out, " ./app 'x y'\n")) << r.out;

  auto slurm = vshmemrun({"-n", "4", "--hostfile", "hosts.txt", "--dry-run", "./app"}, "",
                         {"SLURM_JOB_ID=42"});
  ASSERT_EQ(slurm.status, 0) << slurm.err;
  EXPECT_TRUE(slurm.out.rfind("srun --mpi=pmix -n 4 ", 0) == 0) << slurm.out;
  EXPECT_TRUE(has(slurm.out, "VSHMEM_BOOTSTRAP=pmix")) << slurm.out;
}

}  // namespace

// Issue 15 item 5: what every PE printed reaches the terminal (here: a pipe, so the PEs' stdout
// is fully buffered) even when the launcher stops them because another PE failed.
TEST(VshmemrunWithRuntime, OutputOfStoppedPesIsNotLost) {
  const std::string token = std::to_string(std::random_device{}());
  for (const char* tag : {"", "--tag-output"}) {
    std::vector<std::string> args{"-n", "3"};
    if (*tag) args.push_back(tag);
    args.insert(args.end(), {LAUNCHER_PE_PATH, "drain", token});
    auto r = vshmemrun(args, "", {"VSHMEM_BACKEND=host", "VSHMEM_BOOTSTRAP_TIMEOUT=20"});
    EXPECT_EQ(r.status, 3) << r.err;
    for (int pe = 0; pe < 3; ++pe) {
      EXPECT_TRUE(has(r.out, "PE " + std::to_string(pe) + " says " + token))
          << "PE " << pe << "'s line is lost (" << tag << "):\n"
          << r.out << "\n"
          << r.err;
    }
    EXPECT_TRUE(has(r.err, "vshmemrun: PE 1 (pid ")) << r.err;
  }
}

// Issue 19 item 8: the first failure gives the status and is named, also when another PE calls
// shmem_global_exit right after it, in reaction.
TEST(VshmemrunWithRuntime, FirstFailureIsBlamedNotTheReaction) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = vshmemrun({"-n", "3", LAUNCHER_PE_PATH, "react"}, "",
                       {"VSHMEM_BACKEND=host", "VSHMEM_BOOTSTRAP_TIMEOUT=20"});
    EXPECT_EQ(r.status, 128 + SIGKILL) << r.err;
    EXPECT_TRUE(has(r.err, "vshmemrun: PE 1 (pid ")) << r.err;
    EXPECT_TRUE(has(r.err, "killed by signal 9")) << r.err;
    EXPECT_FALSE(has(r.err, "PE 0 called shmem_global_exit(5); stopping")) << r.err;
  }
}

// Issue 19 item 7: a VSHMEM_LAUNCHER_PID that is not this PE's launcher (stale, inherited, or
// pointing at an unrelated process) is never signalled.
TEST(VshmemrunWithRuntime, AnUnprovenLauncherPidIsNeverSignalled) {
  for (const char* mode : {"init_finalize", "global_exit"}) {
    // The unrelated process: default dispositions, so any of the launcher signals would end it.
    pid_t victim = fork();
    if (victim == 0) {
      signal(SIGUSR1, SIG_DFL);
      for (;;) pause();
    }
    char start[64] = {};
    {
      FILE* f = fopen(("/proc/" + std::to_string(victim) + "/stat").c_str(), "r");
      ASSERT_NE(f, nullptr);
      char buf[1024] = {};
      (void)!fread(buf, 1, sizeof(buf) - 1, f);
      fclose(f);
      const char* p = strrchr(buf, ')');
      for (int field = 2; *p && field < 22; ++p) field += *p == ' ';
      snprintf(start, sizeof(start), "%llu", strtoull(p, nullptr, 10));
    }
    pid_t pe = fork();
    if (pe == 0) {
      setenv("VSHMEM_LAUNCHER_PID", std::to_string(victim).c_str(), 1);
      // Even with the right start time: the victim is not an ancestor of the PE.
      setenv("VSHMEM_LAUNCHER_START", start, 1);
      setenv("VSHMEM_BACKEND", "host", 1);
      setenv("VSHMEM_BOOTSTRAP", "auto", 1);
      execl(LAUNCHER_PE_PATH, LAUNCHER_PE_PATH, mode, static_cast<char*>(nullptr));
      _exit(127);
    }
    int st = 0;
    waitpid(pe, &st, 0);
    usleep(100 * 1000);  // a queued signal would have been delivered by now
    int vst = 0;
    EXPECT_EQ(waitpid(victim, &vst, WNOHANG), 0)
        << mode << ": the unrelated process was ended by signal "
        << (WIFSIGNALED(vst) ? WTERMSIG(vst) : 0);
    kill(victim, SIGKILL);
    waitpid(victim, nullptr, 0);
  }
}
