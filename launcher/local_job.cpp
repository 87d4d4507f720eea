#include "launcher/local_job.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/bootstrap/launcher_protocol.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/private_dir.hpp"
#include "runtime/common/process_info.hpp"

extern char** environ;

namespace vshmem::launcher {
namespace {

// Counts GPUs the way the PEs will see them: through the driver, which applies
// CUDA_VISIBLE_DEVICES. The driver is loaded at run time so that vshmemrun runs without CUDA, and
// in a short-lived child, so that the launcher itself never initializes CUDA (no driver threads
// or MPS client connection in the process that forks the PEs and waits for them).
int count_gpus() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 0;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    ::close(fds[0]);
    int n = 0;
    void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      using InitFn = int (*)(unsigned);
      using CountFn = int (*)(int*);
      auto init = reinterpret_cast<InitFn>(::dlsym(h, "cuInit"));
      auto count = reinterpret_cast<CountFn>(::dlsym(h, "cuDeviceGetCount"));
      if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0) n = 0;
    }
    ssize_t w = ::write(fds[1], &n, sizeof(n));
    (void)w;
    ::_exit(0);
  }
  ::close(fds[1]);
  int n = 0;
  pollfd p{fds[0], POLLIN, 0};
  // A driver that does not answer within the limit counts as no GPU.
  if (::poll(&p, 1, 30000) <= 0 || ::read(fds[0], &n, sizeof(n)) != sizeof(n)) n = 0;
  ::close(fds[0]);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return n;
}

std::string signal_description(int sig) {
  const char* d = strsignal(sig);
  return std::to_string(sig) + " (" + (d ? d : "unknown") + ")";
}

void write_fully(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our own output is gone (closed pipe): nothing sensible to do
    off += static_cast<size_t>(w);
  }
}

}  // namespace

int LocalJob::run(const LocalJobSpec& spec) {
  LocalJob job(spec);
  if (!job.prepare() || !job.take_signals()) return 1;
  job.start_pes();
  if (!job.supervise()) return 1;
  return job.exit_status();
}

LocalJob::LocalJob(const LocalJobSpec& spec) : spec_(spec), pes_(spec.npes) {}

LocalJob::~LocalJob() {
  // The job's sockets go whatever happened to the PEs.
  if (!dir_.empty()) remove_private_dir(dir_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

bool LocalJob::prepare() {
  const pid_t self = ::getpid();
  char pid_hex[16];
  std::snprintf(pid_hex, sizeof(pid_hex), "%x", static_cast<unsigned>(self));
  Result<std::string> tag = random_hex(4);
  Result<std::string> secret_hex = random_hex(16);
  if (!tag || !secret_hex) {
    std::fprintf(stderr, "vshmemrun: %s\n",
                 (!tag ? tag.status() : secret_hex.status()).message().c_str());
    return false;
  }
  const std::string job_id = std::string(pid_hex) + "-" + *tag;
  const std::string secret = *secret_hex;
  // The job's sockets (the bootstrap's and the handle-passing ones) live in a directory only our
  // user can enter; it is removed when the job ends, whatever happened to the PEs.
  auto dir = private_job_dir(job_id);
  if (!dir) {
    std::fprintf(stderr, "vshmemrun: %s\n", dir.status().message().c_str());
    return false;
  }
  dir_ = *dir;
  const std::string address = dir_ + "/bootstrap";
  // With the pid, the start time proves to a PE that the process it signals is this vshmemrun.
  const unsigned long long start_time = process_start_time(self);
  const bool user_device = vshmem::env::is_set("VSHMEM_DEVICE");
  const bool user_node_id = vshmem::env::is_set("VSHMEM_NODE_ID");
  const bool user_module_loading = vshmem::env::is_set("CUDA_MODULE_LOADING");
  const int ngpus = user_device ? 0 : count_gpus();

  // Each PE's environment is built before fork: count_gpus may have started driver threads,
  // and after fork in a threaded process only async-signal-safe calls are allowed.
  const std::vector<std::string> ours = {
      "VSHMEM_BOOTSTRAP=",    "VSHMEM_SOCKET_ADDR=",    "VSHMEM_JOB_ID=",     "VSHMEM_JOB_SECRET=",
      "VSHMEM_RANK=",         "VSHMEM_NPES=",           "VSHMEM_LOCAL_RANK=", "VSHMEM_LOCAL_SIZE=",
      "VSHMEM_LAUNCHER_PID=", "VSHMEM_LAUNCHER_START=", "VSHMEM_SOCKET_DIR="};
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    bool replaced = std::any_of(ours.begin(), ours.end(),
                                [&](const std::string& p) { return kv.rfind(p, 0) == 0; });
    if (!replaced) base.push_back(kv);
  }
  for (int r = 0; r < spec_.npes; ++r) {
    std::vector<std::string>& env = pes_[r].env;
    env = base;
    env.push_back("VSHMEM_BOOTSTRAP=socket");
    env.push_back("VSHMEM_SOCKET_ADDR=" + address);
    env.push_back("VSHMEM_JOB_ID=" + job_id);
    env.push_back("VSHMEM_JOB_SECRET=" + secret);
    env.push_back("VSHMEM_RANK=" + std::to_string(r));
    env.push_back("VSHMEM_NPES=" + std::to_string(spec_.npes));
    env.push_back("VSHMEM_LOCAL_RANK=" + std::to_string(r));
    env.push_back("VSHMEM_LOCAL_SIZE=" + std::to_string(spec_.npes));
    // shmem_global_exit tells us its status with SIGUSR1 (sigqueue) before the PE exits.
    env.push_back("VSHMEM_LAUNCHER_PID=" + std::to_string(self));
    env.push_back("VSHMEM_LAUNCHER_START=" + std::to_string(start_time));
    env.push_back("VSHMEM_SOCKET_DIR=" + dir_);
    if (ngpus > 0) env.push_back("VSHMEM_DEVICE=" + std::to_string(r % ngpus));
    if (spec_.simulate_nodes > 0) {
      const long long node = static_cast<long long>(r) * spec_.simulate_nodes / spec_.npes;
      if (!user_node_id) env.push_back("VSHMEM_NODE_ID=sim" + std::to_string(node));
      // PEs on several nodes: kernels must not wait for a first launch's loading while they
      // wait for remote PEs (runtime/memory/memory.hpp, prefer_eager_module_loading).
      if (spec_.simulate_nodes > 1 && !user_module_loading) {
        env.push_back("CUDA_MODULE_LOADING=EAGER");
      }
    }
  }
  return true;
}

bool LocalJob::take_signals() {
  // Signals are taken through a signalfd so that the supervision loop is a plain poll loop.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, launcher_protocol::global_exit_signal(),
                launcher_protocol::shmem_state_signal()}) {
    sigaddset(&mask, s);
  }
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask_);
  signal_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) {
    std::fprintf(stderr, "vshmemrun: signalfd(): %s\n", strerror(errno));
    return false;
  }
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}

void LocalJob::stop_all(int sig) {
  for (Pe& p : pes_) {
    if (p.running) ::kill(p.pid, sig);
  }
}

void LocalJob::begin_stopping() {
  if (stopping_) return;
  stopping_ = true;
  stop_all(SIGTERM);
  kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long long>(spec_.grace_s * 1000));
}

void LocalJob::start_pes() {
  // Everything exec needs is built here: the child may only make async-signal-safe calls.
  std::vector<char*> argv;
  argv.reserve(spec_.argv.size() + 1);
  for (const std::string& a : spec_.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv[0] = const_cast<char*>(spec_.program.c_str());
  argv.push_back(nullptr);
  std::vector<std::vector<char*>> envps(spec_.npes);
  for (int r = 0; r < spec_.npes; ++r) {
    for (std::string& s : pes_[r].env) envps[r].push_back(s.data());
    envps[r].push_back(nullptr);
  }
  const pid_t self = ::getpid();
  for (int r = 0; r < spec_.npes; ++r) {
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (spec_.tag_output &&
        (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
      std::fprintf(stderr, "vshmemrun: pipe(): %s\n", strerror(errno));
      exit_code_ = 1;
      begin_stopping();
      break;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "vshmemrun: cannot start PE %d: fork(): %s\n", r, strerror(errno));
      exit_code_ = 1;
      begin_stopping();
      break;
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != self) ::_exit(1);  // vshmemrun died before prctl took effect
      ::signal(SIGPIPE, SIG_DFL);
      ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      if (r != 0) {
        int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) {
          ::dup2(null_fd, 0);
          if (null_fd != 0) ::close(null_fd);
        }
      }
      if (spec_.tag_output) {
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
      }
      ::execve(argv[0], argv.data(), envps[r].data());
      const char msg[] = "vshmemrun: exec failed\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    pes_[r].pid = pid;
    pes_[r].running = true;
    ++running_;
    if (spec_.tag_output) {
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      pes_[r].out = {out_pipe[0], 1, {}};
      pes_[r].err = {err_pipe[0], 2, {}};
    }
  }
}

int LocalJob::rank_of(pid_t pid) const {
  auto it = std::find_if(pes_.begin(), pes_.end(), [&](const Pe& p) { return p.pid == pid; });
  return it == pes_.end() ? -1 : static_cast<int>(it - pes_.begin());
}

// Called before each reap, so that what a PE said before it exited (shmem_finalize done,
// global_exit) is known when its exit is judged.
void LocalJob::handle_signals() {
  signalfd_siginfo si;
  while (::read(signal_fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) continue;
    if (sig == launcher_protocol::shmem_state_signal()) {
      for (Pe& p : pes_) {
        if (p.pid == static_cast<pid_t>(si.ssi_pid)) p.in_shmem = si.ssi_int != 0;
      }
      continue;
    }
    if (sig == launcher_protocol::global_exit_signal()) {
      const int rank = rank_of(static_cast<pid_t>(si.ssi_pid));
      if (rank >= 0) global_exits_.push_back({rank, si.ssi_int});  // else not from a PE
      continue;
    }
    // Forwarded, not acted on: the PEs decide how to react; the grace period bounds it.
    if (received_signal_ == 0 && running_ > 0) {
      std::fprintf(stderr, "vshmemrun: received signal %s; forwarding it to the PEs\n",
                   signal_description(sig).c_str());
    }
    received_signal_ = sig;
    stop_all(sig);
    if (!stopping_) {
      stopping_ = true;
      kill_at_ =
          Clock::now() + std::chrono::milliseconds(static_cast<long long>(spec_.grace_s * 1000));
    }
  }
}

void LocalJob::reap() {
  handle_signals();
  // Every PE that has exited by now, then judged together: when several ended at once (one
  // died, the others failed in reaction), a death by a signal comes before a failing exit,
  // which comes before a clean one, whatever order waitpid returns them in.
  std::vector<Exit> exits;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    // Whatever this PE signalled was sent before it exited, so it is pending by now.
    handle_signals();
    const int rank = rank_of(pid);
    if (rank < 0) continue;
    pes_[rank].running = false;
    --running_;
    exits.push_back({rank, pid, status});
  }
  const auto order = [](const Exit& e) {
    return WIFSIGNALED(e.status) ? 0 : WEXITSTATUS(e.status) != 0 ? 1 : 2;
  };
  std::stable_sort(exits.begin(), exits.end(),
                   [&](const Exit& a, const Exit& b) { return order(a) < order(b); });
  for (const Exit& e : exits) judge(e);
  judge_global_exits();
}

void LocalJob::judge(const Exit& e) {
  const Pe& pe = pes_[e.rank];
  int code = 0;
  std::string what;
  if (WIFEXITED(e.status)) {
    code = WEXITSTATUS(e.status);
    what = "exited with status " + std::to_string(code);
  } else if (WIFSIGNALED(e.status)) {
    code = 128 + WTERMSIG(e.status);
    what = "was killed by signal " + signal_description(WTERMSIG(e.status));
  }
  const bool announced = std::any_of(global_exits_.begin(), global_exits_.end(),
                                     [&](const GlobalExit& g) { return g.rank == e.rank; });
  if (announced) return;  // judged with its shmem_global_exit notice
  if (code == 0 && pe.in_shmem && !stopping_ && running_ > 0) {
    std::fprintf(stderr,
                 "vshmemrun: PE %d (pid %d) exited with status 0 after shmem_init without "
                 "calling shmem_finalize; the other PEs would wait for it forever: stopping "
                 "them\n",
                 e.rank, static_cast<int>(e.pid));
    if (!first_failure_) first_failure_ = Failure{e.rank, 1};
    begin_stopping();
    return;
  }
  if (code == 0) return;
  if (first_failure_ || stopping_) {
    // A PE we are stopping ourselves, or one that failed in reaction to the first failure.
    if (exit_code_ == 0) exit_code_ = code;
    return;
  }
  first_failure_ = Failure{e.rank, code};
  if (running_ > 0) {
    std::fprintf(stderr, "vshmemrun: PE %d (pid %d) %s; stopping the other PEs\n", e.rank,
                 static_cast<int>(e.pid), what.c_str());
    begin_stopping();
  } else {
    std::fprintf(stderr, "vshmemrun: PE %d (pid %d) %s\n", e.rank, static_cast<int>(e.pid),
                 what.c_str());
  }
}

void LocalJob::judge_global_exits() {
  for (const GlobalExit& g : global_exits_) {
    if (first_failure_) {
      std::fprintf(stderr,
                   "vshmemrun: PE %d called shmem_global_exit(%d) after PE %d had failed; the "
                   "job's status stays PE %d's\n",
                   g.rank, g.status, first_failure_->rank, first_failure_->rank);
    } else {
      first_failure_ = Failure{g.rank, g.status & 0xff};
      std::fprintf(stderr,
                   "vshmemrun: PE %d called shmem_global_exit(%d); stopping the other PEs\n",
                   g.rank, g.status);
    }
    begin_stopping();
  }
  global_exits_.clear();
}

void LocalJob::kill_the_late() {
  std::vector<std::string> left;
  for (int r = 0; r < spec_.npes; ++r) {
    if (pes_[r].running) left.push_back(std::to_string(r));
  }
  std::string list;
  for (const std::string& s : left) list += (list.empty() ? "" : ", ") + s;
  std::fprintf(stderr, "vshmemrun: PE%s %s did not stop within %g s; killing %s\n",
               left.size() > 1 ? "s" : "", list.c_str(), spec_.grace_s,
               left.size() > 1 ? "them" : "it");
  stop_all(SIGKILL);
  kill_at_ = Clock::now() + std::chrono::hours(1);  // SIGKILL cannot be resisted
}

namespace {

// Reads what is available; emits complete lines with the PE's tag. Returns false at EOF.
template <typename Stream>
bool pump(Stream& s, int rank) {
  char buf[65536];
  ssize_t n = ::read(s.fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  const std::string tag = "[PE " + std::to_string(rank) + "] ";
  std::string emit;
  if (n <= 0) {
    if (!s.partial.empty()) emit = tag + s.partial + "\n";
    s.partial.clear();
    write_fully(s.target, emit);
    ::close(s.fd);
    s.fd = -1;
    return false;
  }
  s.partial.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    emit += tag;
    emit.append(s.partial, start, nl + 1 - start);
  }
  s.partial.erase(0, start);
  write_fully(s.target, emit);
  return true;
}

}  // namespace

bool LocalJob::supervise() {
  std::optional<Clock::time_point> drain_until;
  for (;;) {
    bool streams_open = false;
    std::vector<pollfd> pfds{{signal_fd_, POLLIN, 0}};
    std::vector<OutputStream*> streams{nullptr};
    std::vector<int> ranks{-1};
    for (int r = 0; r < spec_.npes; ++r) {
      for (OutputStream* s : {&pes_[r].out, &pes_[r].err}) {
        if (s->fd < 0) continue;
        streams_open = true;
        pfds.push_back({s->fd, POLLIN, 0});
        streams.push_back(s);
        ranks.push_back(r);
      }
    }
    if (running_ == 0) {
      // A PE's own children may hold its output pipe open; do not wait for them forever.
      if (!streams_open) break;
      if (!drain_until) drain_until = Clock::now() + std::chrono::seconds(1);
      if (Clock::now() >= *drain_until) break;
    }
    int timeout_ms = -1;
    if (stopping_ && running_ > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    if (drain_until) timeout_ms = 100;
    int pr = ::poll(pfds.data(), pfds.size(), timeout_ms);
    if (pr < 0 && errno != EINTR) {
      std::fprintf(stderr, "vshmemrun: poll(): %s\n", strerror(errno));
      stop_all(SIGKILL);
      return false;
    }
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*streams[i], ranks[i]);
    }
    reap();  // reads the pending signals too
    if (stopping_ && running_ > 0 && Clock::now() >= kill_at_) kill_the_late();
  }
  return true;
}

int LocalJob::exit_status() const {
  if (first_failure_) return first_failure_->code;
  if (exit_code_ == 0 && received_signal_ != 0) return 128 + received_signal_;
  return exit_code_;
}

}  // namespace vshmem::launcher
