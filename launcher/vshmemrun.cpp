// vshmemrun: starts the PEs of a vshmem job.
//
// On one node it starts N processes itself, wired together by the socket bootstrap (see
// runtime/bootstrap/socket_bootstrap.cpp for the environment contract). It owns their
// lifetime: the first PE that fails stops the others, nothing outlives vshmemrun
// (PR_SET_PDEATHSIG), and its exit status is the first failure's.
//
// With --hosts / --hostfile / -ppn the job spans nodes, and vshmemrun hands it to the launcher
// that owns those nodes (srun inside a Slurm allocation, else Open MPI's mpirun or PRRTE's
// prterun) with the PMIx bootstrap, forwarding every VSHMEM_* and SHMEM_* variable.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bootstrap/launcher_protocol.hpp"
#include "runtime/common/env.hpp"
#include "runtime/common/private_dir.hpp"
#include "runtime/common/process_info.hpp"

extern char** environ;

namespace vshmem::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kUsageError = 2;
constexpr char kUsage[] =
    "usage: vshmemrun -n N [options] [--] program [args...]\n"
    "\n"
    "Starts N PEs of a vshmem program.\n"
    "\n"
    "  -n, -np, --npes N     number of PEs (required)\n"
    "  --tag-output          prefix every line of output with \"[PE k] \"\n"
    "  --grace SECONDS       after a PE fails, how long the others get between SIGTERM and\n"
    "                        SIGKILL (default 3)\n"
    "  --simulate-nodes K    run the PEs as K simulated nodes (for testing): PE r gets\n"
    "                        VSHMEM_NODE_ID=sim<r*K/N> (unless VSHMEM_NODE_ID is set), so peers\n"
    "                        of other simulated nodes take the remote path (UCX)\n"
    "  -h, --help            this text\n"
    "\n"
    "Several nodes (the job is handed to srun inside a Slurm allocation, else to Open MPI's\n"
    "mpirun or PRRTE's prterun, with the PMIx bootstrap):\n"
    "  --hosts a,b,...       the nodes (Open MPI syntax, host:slots allowed)\n"
    "  --hostfile FILE       the nodes, one per line\n"
    "  -ppn, --ppn K         PEs per node\n"
    "  --launcher-arg ARG    pass ARG to that launcher (repeatable)\n"
    "  --dry-run             print the command instead of running it\n"
    "\n"
    "On one node, stdin goes to PE 0 (the others read /dev/null). Each PE gets\n"
    "VSHMEM_LOCAL_RANK and VSHMEM_LOCAL_SIZE, and where GPUs exist VSHMEM_DEVICE = local rank\n"
    "modulo the number of GPUs (unless VSHMEM_DEVICE is set). The exit status is the first\n"
    "failing PE's (128+signal for a PE killed by a signal).\n";

struct Options {
  int npes = -1;
  bool tag_output = false;
  double grace_s = 3.0;
  std::string hosts;
  std::string hostfile;
  int ppn = 0;
  bool dry_run = false;
  int simulate_nodes = 0;  // 0: the PEs see the real node
  std::vector<std::string> launcher_args;
  std::vector<std::string> program;  // program and its arguments
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "vshmemrun: %s\n(vshmemrun --help for usage)\n", message.c_str());
  std::exit(kUsageError);
}

std::optional<long> parse_positive(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v <= 0) return std::nullopt;
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const std::string& opt) -> std::string {
    if (i + 1 >= argc) usage_error(opt + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;  // the program
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "-n" || a == "-np" || a == "--np" || a == "--npes" ||
               a.rfind("--npes=", 0) == 0) {
      std::string v = a.rfind("--npes=", 0) == 0 ? a.substr(7) : value(a);
      auto n = parse_positive(v);
      if (!n || *n > 1000000) {
        usage_error("-n '" + v + "': expected a positive number of PEs");
      }
      o.npes = static_cast<int>(*n);
    } else if (a == "--tag-output") {
      o.tag_output = true;
    } else if (a == "--grace") {
      std::string v = value(a);
      char* end = nullptr;
      double g = std::strtod(v.c_str(), &end);
      if (*end != '\0' || !(g >= 0) || g > 3600) {
        usage_error("--grace '" + v + "': expected seconds in [0, 3600]");
      }
      o.grace_s = g;
    } else if (a == "--hosts" || a == "--host" || a == "-H") {
      o.hosts = value(a);
    } else if (a == "--hostfile" || a == "--machinefile") {
      o.hostfile = value(a);
    } else if (a == "-ppn" || a == "--ppn") {
      std::string v = value(a);
      auto n = parse_positive(v);
      if (!n) usage_error(a + " '" + v + "': expected a positive number of PEs per node");
      o.ppn = static_cast<int>(*n);
    } else if (a == "--launcher-arg") {
      o.launcher_args.push_back(value(a));
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--simulate-nodes") {
      std::string v = value(a);
      auto n = parse_positive(v);
      if (!n || *n > 1000000) usage_error(a + " '" + v + "': expected a positive number of nodes");
      o.simulate_nodes = static_cast<int>(*n);
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  for (; i < argc; ++i) o.program.push_back(argv[i]);
  if (o.npes < 0) usage_error("-n N is required (the number of PEs)");
  if (o.program.empty()) usage_error("no program given");
  if (o.simulate_nodes > o.npes) {
    usage_error("--simulate-nodes " + std::to_string(o.simulate_nodes) + ": more nodes than the " +
                std::to_string(o.npes) + " PEs");
  }
  if (o.simulate_nodes > 0 && (!o.hosts.empty() || !o.hostfile.empty() || o.ppn > 0)) {
    usage_error("--simulate-nodes applies to one node only, not with --hosts / --hostfile / -ppn");
  }
  return o;
}

// The program as execv needs it: PATH search like the shell, so that a typo fails here with a
// clear message instead of N times in the children.
std::optional<std::string> resolve_program(const std::string& name, std::string* why) {
  auto usable = [&](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
      *why = "'" + path + "' is not an executable file";
      return false;
    }
    return true;
  };
  if (name.find('/') != std::string::npos) {
    if (usable(name)) return name;
    if (why->empty()) *why = "program '" + name + "' not found";
    return std::nullopt;
  }
  std::string dirs = vshmem::env::get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = colon > start ? dirs.substr(start, colon - start) : ".";
    std::string candidate = dir + "/" + name;
    if (usable(candidate)) return candidate;
    start = colon + 1;
  }
  if (why->empty()) *why = "program '" + name + "' not found in PATH";
  return std::nullopt;
}

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "vshmemrun: getrandom(): %s\n", strerror(errno));
      std::exit(1);
    }
    got += static_cast<size_t>(n);
  }
  std::string s;
  char buf[3];
  for (unsigned char c : raw) {
    std::snprintf(buf, sizeof(buf), "%02x", c);
    s += buf;
  }
  return s;
}

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

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=/.,:@%") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool on_path(const std::string& name) {
  std::string why;
  return resolve_program(name, &why).has_value();
}

// ---------------------------------------------------------------------------------------------
// Several nodes: build the command of the launcher that owns them.

int hand_off(const Options& o) {
  std::vector<std::string> cmd;
  // Variables vshmemrun sets for its own PEs; forwarding them would confuse the remote PEs.
  // VSHMEM_LAUNCHER_* would name a vshmemrun that is not the remote PEs' launcher.
  const std::vector<std::string> internal = {
      "VSHMEM_BOOTSTRAP",    "VSHMEM_SOCKET_ADDR",    "VSHMEM_JOB_ID",     "VSHMEM_JOB_SECRET",
      "VSHMEM_RANK",         "VSHMEM_NPES",           "VSHMEM_LOCAL_RANK", "VSHMEM_LOCAL_SIZE",
      "VSHMEM_LAUNCHER_PID", "VSHMEM_LAUNCHER_START", "VSHMEM_SOCKET_DIR"};
  std::vector<std::string> forward;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    if (name.rfind("VSHMEM_", 0) != 0 && name.rfind("SHMEM_", 0) != 0) continue;
    if (std::find(internal.begin(), internal.end(), name) != internal.end()) continue;
    forward.push_back(name);
  }
  std::sort(forward.begin(), forward.end());
  const std::string n = std::to_string(o.npes);
  if (vshmem::env::is_set("SLURM_JOB_ID")) {
    // srun exports the whole environment by default; only the bootstrap choice is added.
    cmd = {"srun", "--mpi=pmix", "-n", n};
    if (o.ppn > 0) cmd.push_back("--ntasks-per-node=" + std::to_string(o.ppn));
    if (!o.hosts.empty()) cmd.push_back("--nodelist=" + o.hosts);
    if (!o.hostfile.empty()) cmd.push_back("--nodefile=" + o.hostfile);
    if (o.tag_output) cmd.push_back("--label");
    cmd.push_back("--export=ALL,VSHMEM_BOOTSTRAP=pmix");
  } else {
    std::string launcher = on_path("mpirun") ? "mpirun" : on_path("prterun") ? "prterun" : "";
    if (launcher.empty()) {
      std::fprintf(stderr,
                   "vshmemrun: running on several nodes needs Open MPI's mpirun or PRRTE's "
                   "prterun in PATH (or a Slurm allocation); neither was found\n");
      return kUsageError;
    }
    cmd = {launcher, "-np", n};
    if (!o.hosts.empty()) {
      std::string hosts = o.hosts;
      if (o.ppn > 0) {
        // Open MPI gives a host one slot unless told otherwise.
        std::string with_slots;
        size_t start = 0;
        while (start <= hosts.size()) {
          size_t comma = hosts.find(',', start);
          if (comma == std::string::npos) comma = hosts.size();
          std::string h = hosts.substr(start, comma - start);
          if (!h.empty()) {
            if (h.find(':') == std::string::npos) h += ":" + std::to_string(o.ppn);
            with_slots += (with_slots.empty() ? "" : ",") + h;
          }
          start = comma + 1;
        }
        hosts = with_slots;
      }
      cmd.insert(cmd.end(), {"--host", hosts});
    }
    if (!o.hostfile.empty()) cmd.insert(cmd.end(), {"--hostfile", o.hostfile});
    if (o.ppn > 0) cmd.insert(cmd.end(), {"--map-by", "ppr:" + std::to_string(o.ppn) + ":node"});
    if (o.tag_output) cmd.push_back("--tag-output");
    cmd.insert(cmd.end(), {"-x", "VSHMEM_BOOTSTRAP=pmix"});
    for (const std::string& name : forward) cmd.insert(cmd.end(), {"-x", name});
  }
  cmd.insert(cmd.end(), o.launcher_args.begin(), o.launcher_args.end());
  cmd.insert(cmd.end(), o.program.begin(), o.program.end());
  if (o.dry_run) {
    std::string line;
    for (const std::string& a : cmd) line += (line.empty() ? "" : " ") + shell_quote(a);
    std::printf("%s\n", line.c_str());
    return 0;
  }
  std::vector<char*> args;
  for (const std::string& a : cmd) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::setenv("VSHMEM_BOOTSTRAP", "pmix", 1);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "vshmemrun: cannot run %s: %s\n", args[0], strerror(errno));
  return 127;
}

// ---------------------------------------------------------------------------------------------
// One node: start and supervise the PEs.

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
};

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

// Reads what is available; emits complete lines with the PE's tag. Returns false at EOF.
bool pump(OutputStream& s, int rank) {
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

int run_local(const Options& o) {
  std::string why;
  auto program = resolve_program(o.program[0], &why);
  if (!program) {
    std::fprintf(stderr, "vshmemrun: %s\n", why.c_str());
    return kUsageError;
  }
  const pid_t self = ::getpid();
  char pid_hex[16];
  std::snprintf(pid_hex, sizeof(pid_hex), "%x", static_cast<unsigned>(self));
  const std::string job_id = std::string(pid_hex) + "-" + random_hex(4);
  const std::string secret = random_hex(16);
  // The job's sockets (the bootstrap's and the handle-passing ones) live in a directory only our
  // user can enter; vshmemrun removes it when the job ends, whatever happened to the PEs.
  auto dir = private_job_dir(job_id);
  if (!dir) {
    std::fprintf(stderr, "vshmemrun: %s\n", dir.status().message().c_str());
    return 1;
  }
  struct DirGuard {
    std::string path;
    ~DirGuard() { remove_private_dir(path); }
  } dir_guard{*dir};
  const std::string address = *dir + "/bootstrap";
  // With the pid, the start time proves to a PE that the process it signals is this vshmemrun.
  const unsigned long long start_time = process_start_time(self);
  const bool user_device = vshmem::env::is_set("VSHMEM_DEVICE");
  const bool user_node_id = vshmem::env::is_set("VSHMEM_NODE_ID");
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
  std::vector<std::vector<std::string>> envs(o.npes);
  std::vector<std::vector<char*>> envps(o.npes);
  for (int r = 0; r < o.npes; ++r) {
    envs[r] = base;
    envs[r].push_back("VSHMEM_BOOTSTRAP=socket");
    envs[r].push_back("VSHMEM_SOCKET_ADDR=" + address);
    envs[r].push_back("VSHMEM_JOB_ID=" + job_id);
    envs[r].push_back("VSHMEM_JOB_SECRET=" + secret);
    envs[r].push_back("VSHMEM_RANK=" + std::to_string(r));
    envs[r].push_back("VSHMEM_NPES=" + std::to_string(o.npes));
    envs[r].push_back("VSHMEM_LOCAL_RANK=" + std::to_string(r));
    envs[r].push_back("VSHMEM_LOCAL_SIZE=" + std::to_string(o.npes));
    // shmem_global_exit tells us its status with SIGUSR1 (sigqueue) before the PE exits.
    envs[r].push_back("VSHMEM_LAUNCHER_PID=" + std::to_string(self));
    envs[r].push_back("VSHMEM_LAUNCHER_START=" + std::to_string(start_time));
    envs[r].push_back("VSHMEM_SOCKET_DIR=" + *dir);
    if (ngpus > 0) envs[r].push_back("VSHMEM_DEVICE=" + std::to_string(r % ngpus));
    if (o.simulate_nodes > 0) {
      const long long node = static_cast<long long>(r) * o.simulate_nodes / o.npes;
      if (!user_node_id) envs[r].push_back("VSHMEM_NODE_ID=sim" + std::to_string(node));
    }
    for (std::string& s : envs[r]) envps[r].push_back(s.data());
    envps[r].push_back(nullptr);
  }
  std::vector<char*> argv;
  for (const std::string& a : o.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv[0] = const_cast<char*>(program->c_str());
  argv.push_back(nullptr);

  // Signals are taken through a signalfd so that the supervision loop is a plain poll loop.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, launcher_protocol::global_exit_signal(),
                launcher_protocol::shmem_state_signal()}) {
    sigaddset(&mask, s);
  }
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    std::fprintf(stderr, "vshmemrun: signalfd(): %s\n", strerror(errno));
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);

  std::vector<Pe> pes(o.npes);
  int running = 0;
  int exit_code = 0;
  bool stopping = false;
  Clock::time_point kill_at{};
  const auto grace = std::chrono::milliseconds(static_cast<long long>(o.grace_s * 1000));

  const auto stop_all = [&](int sig) {
    for (Pe& p : pes) {
      if (p.running) ::kill(p.pid, sig);
    }
  };
  const auto begin_stopping = [&]() {
    if (stopping) return;
    stopping = true;
    stop_all(SIGTERM);
    kill_at = Clock::now() + grace;
  };

  for (int r = 0; r < o.npes; ++r) {
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (o.tag_output && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
      std::fprintf(stderr, "vshmemrun: pipe(): %s\n", strerror(errno));
      exit_code = 1;
      begin_stopping();
      break;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "vshmemrun: cannot start PE %d: fork(): %s\n", r, strerror(errno));
      exit_code = 1;
      begin_stopping();
      break;
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != self) ::_exit(1);  // vshmemrun died before prctl took effect
      ::signal(SIGPIPE, SIG_DFL);
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      if (r != 0) {
        int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) {
          ::dup2(null_fd, 0);
          if (null_fd != 0) ::close(null_fd);
        }
      }
      if (o.tag_output) {
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
      }
      ::execve(argv[0], argv.data(), envps[r].data());
      const char msg[] = "vshmemrun: exec failed\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    pes[r].pid = pid;
    pes[r].running = true;
    ++running;
    if (o.tag_output) {
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      pes[r].out = {out_pipe[0], 1, {}};
      pes[r].err = {err_pipe[0], 2, {}};
    }
  }

  int received_signal = 0;
  // The first failure decides the exit status and is the one named: a PE that then calls
  // shmem_global_exit in reaction (it saw the first one die) is not blamed.
  struct Failure {
    int rank;
    int code;
  };
  std::optional<Failure> first_failure;
  struct GlobalExit {
    int rank;
    int status;
  };
  std::vector<GlobalExit> global_exits;  // notices read, judged after the exits reaped with them
  const auto rank_of = [&](pid_t pid) {
    auto it = std::find_if(pes.begin(), pes.end(), [&](const Pe& p) { return p.pid == pid; });
    return it == pes.end() ? -1 : static_cast<int>(it - pes.begin());
  };
  // Reads every pending signal. Called before each reap, so that what a PE said before it
  // exited (shmem_finalize done, global_exit) is known when its exit is judged.
  const auto handle_signals = [&]() {
    signalfd_siginfo si;
    while (::read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (sig == launcher_protocol::shmem_state_signal()) {
        for (Pe& p : pes) {
          if (p.pid == static_cast<pid_t>(si.ssi_pid)) p.in_shmem = si.ssi_int != 0;
        }
        continue;
      }
      if (sig == launcher_protocol::global_exit_signal()) {
        const int rank = rank_of(static_cast<pid_t>(si.ssi_pid));
        if (rank >= 0) global_exits.push_back({rank, si.ssi_int});  // else not from a PE
        continue;
      }
      // Forwarded, not acted on: the PEs decide how to react; the grace period bounds it.
      if (received_signal == 0 && running > 0) {
        std::fprintf(stderr, "vshmemrun: received signal %s; forwarding it to the PEs\n",
                     signal_description(sig).c_str());
      }
      received_signal = sig;
      stop_all(sig);
      if (!stopping) {
        stopping = true;
        kill_at = Clock::now() + grace;
      }
    }
  };

  const auto reap = [&]() {
    handle_signals();
    // Every PE that has exited by now, then judged together: when several ended at once (one
    // died, the others failed in reaction), a death by a signal comes before a failing exit,
    // which comes before a clean one, whatever order waitpid returns them in.
    struct Exit {
      int rank;
      pid_t pid;
      int status;
    };
    std::vector<Exit> exits;
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      // Whatever this PE signalled was sent before it exited, so it is pending by now.
      handle_signals();
      const int rank = rank_of(pid);
      if (rank < 0) continue;
      pes[rank].running = false;
      --running;
      exits.push_back({rank, pid, status});
    }
    const auto order = [](const Exit& e) {
      return WIFSIGNALED(e.status) ? 0 : WEXITSTATUS(e.status) != 0 ? 1 : 2;
    };
    std::stable_sort(exits.begin(), exits.end(),
                     [&](const Exit& a, const Exit& b) { return order(a) < order(b); });
    for (const Exit& e : exits) {
      const Pe& pe = pes[e.rank];
      int code = 0;
      std::string what;
      if (WIFEXITED(e.status)) {
        code = WEXITSTATUS(e.status);
        what = "exited with status " + std::to_string(code);
      } else if (WIFSIGNALED(e.status)) {
        code = 128 + WTERMSIG(e.status);
        what = "was killed by signal " + signal_description(WTERMSIG(e.status));
      }
      const bool announced = std::any_of(global_exits.begin(), global_exits.end(),
                                         [&](const GlobalExit& g) { return g.rank == e.rank; });
      if (announced) continue;  // judged with its shmem_global_exit notice below
      if (code == 0 && pe.in_shmem && !stopping && running > 0) {
        std::fprintf(stderr,
                     "vshmemrun: PE %d (pid %d) exited with status 0 after shmem_init without "
                     "calling shmem_finalize; the other PEs would wait for it forever: stopping "
                     "them\n",
                     e.rank, static_cast<int>(e.pid));
        if (!first_failure) first_failure = Failure{e.rank, 1};
        begin_stopping();
        continue;
      }
      if (code == 0) continue;
      if (first_failure || stopping) {
        // A PE we are stopping ourselves, or one that failed in reaction to the first failure.
        if (exit_code == 0) exit_code = code;
        continue;
      }
      first_failure = Failure{e.rank, code};
      if (running > 0) {
        std::fprintf(stderr, "vshmemrun: PE %d (pid %d) %s; stopping the other PEs\n", e.rank,
                     static_cast<int>(e.pid), what.c_str());
        begin_stopping();
      } else {
        std::fprintf(stderr, "vshmemrun: PE %d (pid %d) %s\n", e.rank, static_cast<int>(e.pid),
                     what.c_str());
      }
    }
    for (const GlobalExit& g : global_exits) {
      if (first_failure) {
        std::fprintf(stderr,
                     "vshmemrun: PE %d called shmem_global_exit(%d) after PE %d had failed; the "
                     "job's status stays PE %d's\n",
                     g.rank, g.status, first_failure->rank, first_failure->rank);
      } else {
        first_failure = Failure{g.rank, g.status & 0xff};
        std::fprintf(stderr,
                     "vshmemrun: PE %d called shmem_global_exit(%d); stopping the other PEs\n",
                     g.rank, g.status);
      }
      begin_stopping();
    }
    global_exits.clear();
  };

  std::optional<Clock::time_point> drain_until;
  for (;;) {
    bool streams_open = false;
    std::vector<pollfd> pfds{{sfd, POLLIN, 0}};
    std::vector<OutputStream*> streams{nullptr};
    std::vector<int> ranks{-1};
    for (int r = 0; r < o.npes; ++r) {
      for (OutputStream* s : {&pes[r].out, &pes[r].err}) {
        if (s->fd < 0) continue;
        streams_open = true;
        pfds.push_back({s->fd, POLLIN, 0});
        streams.push_back(s);
        ranks.push_back(r);
      }
    }
    if (running == 0) {
      // A PE's own children may hold its output pipe open; do not wait for them forever.
      if (!streams_open) break;
      if (!drain_until) drain_until = Clock::now() + std::chrono::seconds(1);
      if (Clock::now() >= *drain_until) break;
    }
    int timeout_ms = -1;
    if (stopping && running > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    if (drain_until) timeout_ms = 100;
    int pr = ::poll(pfds.data(), pfds.size(), timeout_ms);
    if (pr < 0 && errno != EINTR) {
      std::fprintf(stderr, "vshmemrun: poll(): %s\n", strerror(errno));
      stop_all(SIGKILL);
      return 1;
    }
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*streams[i], ranks[i]);
    }
    reap();  // reads the pending signals too
    if (stopping && running > 0 && Clock::now() >= kill_at) {
      std::vector<std::string> left;
      for (int r = 0; r < o.npes; ++r) {
        if (pes[r].running) left.push_back(std::to_string(r));
      }
      std::string list;
      for (const std::string& s : left) list += (list.empty() ? "" : ", ") + s;
      std::fprintf(stderr, "vshmemrun: PE%s %s did not stop within %g s; killing %s\n",
                   left.size() > 1 ? "s" : "", list.c_str(), o.grace_s,
                   left.size() > 1 ? "them" : "it");
      stop_all(SIGKILL);
      kill_at = Clock::now() + std::chrono::hours(1);  // SIGKILL cannot be resisted
    }
  }
  if (first_failure) return first_failure->code;
  if (exit_code == 0 && received_signal != 0) exit_code = 128 + received_signal;
  return exit_code;
}

}  // namespace
}  // namespace vshmem::launcher

int main(int argc, char** argv) {
  using namespace vshmem::launcher;
  Options o = parse_args(argc, argv);
  if (!o.hosts.empty() || !o.hostfile.empty() || o.ppn > 0) return hand_off(o);
  if (o.dry_run) {
    std::fprintf(stderr, "vshmemrun: --dry-run applies to --hosts / --hostfile / -ppn only\n");
    return kUsageError;
  }
  return run_local(o);
}
