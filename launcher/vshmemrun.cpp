// vshmemrun: starts the PEs of a vshmem job.
//
// On one node it starts N processes itself, wired together by the socket bootstrap (see
// runtime/bootstrap/socket_bootstrap.cpp for the environment contract). It owns their
// lifetime: the first PE that fails stops the others, nothing outlives vshmemrun
// (PR_SET_PDEATHSIG), and its exit status is the first failure's (launcher/local_job.hpp).
//
// With --hosts / --hostfile / -ppn the job spans nodes, and vshmemrun hands it to the launcher
// that owns those nodes (srun inside a Slurm allocation, else Open MPI's mpirun or PRRTE's
// prterun) with the PMIx bootstrap, forwarding every VSHMEM_* and SHMEM_* variable.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "launcher/local_job.hpp"
#include "runtime/common/env.hpp"

extern char** environ;

namespace vshmem::launcher {
namespace {

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
    // Eager kernel loading for PEs on several nodes (runtime/memory/memory.hpp says why),
    // unless the user chose.
    cmd.push_back(vshmem::env::is_set("CUDA_MODULE_LOADING")
                      ? "--export=ALL,VSHMEM_BOOTSTRAP=pmix"
                      : "--export=ALL,VSHMEM_BOOTSTRAP=pmix,CUDA_MODULE_LOADING=EAGER");
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
    cmd.insert(cmd.end(),
               {"-x", vshmem::env::is_set("CUDA_MODULE_LOADING") ? "CUDA_MODULE_LOADING"
                                                                 : "CUDA_MODULE_LOADING=EAGER"});
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
  args.reserve(cmd.size() + 1);
  for (const std::string& a : cmd) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::setenv("VSHMEM_BOOTSTRAP", "pmix", 1);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "vshmemrun: cannot run %s: %s\n", args[0], strerror(errno));
  return 127;
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
  std::string why;
  auto program = resolve_program(o.program[0], &why);
  if (!program) {
    std::fprintf(stderr, "vshmemrun: %s\n", why.c_str());
    return kUsageError;
  }
  LocalJobSpec spec;
  spec.npes = o.npes;
  spec.tag_output = o.tag_output;
  spec.grace_s = o.grace_s;
  spec.simulate_nodes = o.simulate_nodes;
  spec.program = *program;
  spec.argv = o.program;
  return LocalJob::run(spec);
}
