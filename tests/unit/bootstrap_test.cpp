// Bootstrap layer: option parsing, the singleton bootstrap, and the socket bootstrap's failure
// handling with real processes (forked from the test): time limits naming the missing PE, dead
// PEs reported promptly, impostors refused, topology with simulated nodes.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/bootstrap/socket_bootstrap.hpp"
#include "runtime/common/config.hpp"
#include "runtime/common/private_dir.hpp"

namespace vshmem {
namespace {

using Clock = std::chrono::steady_clock;

std::string random_hex(size_t chars) {
  static std::mt19937_64 gen(std::random_device{}());
  std::string s;
  for (size_t i = 0; i < chars; ++i) s += "0123456789abcdef"[gen() % 16];
  return s;
}

struct Job {
  std::string address = "@vshmem-unit-" + random_hex(16);
  std::string id = "unit-" + random_hex(8);
  std::string secret = random_hex(32);
  int npes;
  explicit Job(int n) : npes(n) {}
  void apply(int rank, double timeout_s) const {
    setenv("VSHMEM_BOOTSTRAP", "socket", 1);
    setenv("VSHMEM_SOCKET_ADDR", address.c_str(), 1);
    setenv("VSHMEM_JOB_ID", id.c_str(), 1);
    setenv("VSHMEM_JOB_SECRET", secret.c_str(), 1);
    setenv("VSHMEM_RANK", std::to_string(rank).c_str(), 1);
    setenv("VSHMEM_NPES", std::to_string(npes).c_str(), 1);
    setenv("VSHMEM_BOOTSTRAP_TIMEOUT", std::to_string(timeout_s).c_str(), 1);
    (void)config::load();
  }
};

struct Outcome {
  std::string text;    // what the process reported
  double seconds = 0;  // from the start of the job until the process finished
  int status = -1;
};

// Runs fn(i) in `count` forked processes; each returns a text that comes back to the test.
std::vector<Outcome> run_processes(int count, const std::function<std::string(int)>& fn,
                                   double limit_s = 30) {
  std::vector<pid_t> pids(count);
  std::vector<int> fds(count);
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      std::string text = fn(i);
      (void)!write(p[1], text.data(), text.size());
      _exit(0);
    }
    close(p[1]);
    pids[i] = pid;
    fds[i] = p[0];
  }
  std::vector<Outcome> out(count);
  int open = count;
  std::vector<bool> done(count, false);
  while (open > 0) {
    // In seconds: the difference alone would be a duration of nanoseconds, whose count times 1000
    // overflows poll's int (a negative time-out: poll waited for ever, and this limit never
    // fired; Clang's UndefinedBehaviorSanitizer reports the conversion).
    const std::chrono::duration<double> left =
        std::chrono::duration<double>(limit_s) - (Clock::now() - start);
    if (left.count() <= 0) break;
    std::vector<pollfd> pfds;
    std::vector<int> idx;
    for (int i = 0; i < count; ++i) {
      if (!done[i]) {
        pfds.push_back({fds[i], POLLIN, 0});
        idx.push_back(i);
      }
    }
    poll(pfds.data(), pfds.size(), static_cast<int>(left.count() * 1000) + 1);
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!pfds[k].revents) continue;
      char buf[4096];
      ssize_t n = read(pfds[k].fd, buf, sizeof(buf));
      int i = idx[k];
      if (n > 0) {
        out[i].text.append(buf, n);
      } else {
        done[i] = true;
        --open;
        out[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
      }
    }
  }
  for (int i = 0; i < count; ++i) {
    if (!done[i]) {
      out[i].text += "<no answer within the test's limit>";
      kill(pids[i], SIGKILL);
    }
    waitpid(pids[i], &out[i].status, 0);
    close(fds[i]);
  }
  return out;
}

std::string connect_and(const std::function<std::string(Bootstrap&)>& body) {
  auto b = create_bootstrap({});
  if (!b) return "create_bootstrap: " + b.status().message();
  return body(**b);
}

std::string text_of(const Status& st) { return st.is_ok() ? "ok" : st.message(); }

TEST(BootstrapTimeout, ParsesSecondsAndRejectsGarbage) {
  EXPECT_EQ(detail::parse_bootstrap_timeout("2").value().count(), 2000);
  EXPECT_EQ(detail::parse_bootstrap_timeout("2.5").value().count(), 2500);
  for (const char* bad : {"abc", "0", "-3", "5s", "", "1e9", "nan", "inf"}) {
    auto r = detail::parse_bootstrap_timeout(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.status().message().find("VSHMEM_BOOTSTRAP_TIMEOUT"), std::string::npos);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
  unsetenv("VSHMEM_BOOTSTRAP_TIMEOUT");
  (void)config::load();
  EXPECT_EQ(bootstrap_timeout().value().count(), 120000);
  setenv("VSHMEM_BOOTSTRAP_TIMEOUT", "soon", 1);
  EXPECT_NE(config::load().message().find("VSHMEM_BOOTSTRAP_TIMEOUT='soon'"), std::string::npos);
  auto r = create_bootstrap({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("VSHMEM_BOOTSTRAP_TIMEOUT='soon'"), std::string::npos)
      << r.status().message();
  unsetenv("VSHMEM_BOOTSTRAP_TIMEOUT");
  (void)config::load();
}

TEST(CreateBootstrap, UnknownNameIsAClearError) {
  setenv("VSHMEM_BOOTSTRAP", "carrier-pigeon", 1);
  (void)config::load();
  auto r = create_bootstrap({});
  unsetenv("VSHMEM_BOOTSTRAP");
  (void)config::load();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("VSHMEM_BOOTSTRAP='carrier-pigeon' is not one of auto, "
                                      "socket, mpi, pmix"),
            std::string::npos)
      << r.status().message();
}

TEST(CreateBootstrap, SocketWithoutLauncherNamesTheMissingVariable) {
  auto out = run_processes(1, [](int) {
    unsetenv("VSHMEM_SOCKET_ADDR");
    setenv("VSHMEM_BOOTSTRAP", "socket", 1);
    (void)config::load();
    auto r = create_bootstrap({});
    return r.is_ok() ? std::string("ok") : r.status().message();
  });
  EXPECT_NE(out[0].text.find("VSHMEM_SOCKET_ADDR is not set"), std::string::npos) << out[0].text;
}

TEST(CreateBootstrap, NoLauncherGivesASingleton) {
  auto out = run_processes(1, [](int) {
    for (const char* v : {"VSHMEM_BOOTSTRAP", "VSHMEM_SOCKET_ADDR", "PMIX_RANK",
                          "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE"}) {
      unsetenv(v);
    }
    (void)config::load();
    return connect_and([](Bootstrap& b) -> std::string {
      std::string r =
          std::string(b.name()) + " " + std::to_string(b.rank()) + "/" + std::to_string(b.size());
      std::string in = random_hex(40), out(40, '#');
      r += " " + text_of(b.allgather(in.data(), out.data(), in.size()));
      r += out == in ? " copied" : " NOT-COPIED";
      r += " " + text_of(b.barrier());
      auto bad = b.broadcast(out.data(), out.size(), 1);
      r += bad.is_ok() ? " root1-accepted" : " root1-refused";
      auto id = agree_job_identity(b);
      r += id && id->secret.size() == 32 && !id->id.empty() ? " identity" : " NO-IDENTITY";
      return r;
    });
  });
  EXPECT_EQ(out[0].text, "singleton 0/1 ok copied ok root1-refused identity");
}

TEST(SocketBootstrap, CollectivesWithFreshDataAcrossProcessCounts) {
  for (int n : {1, 2, 3, 5}) {
    Job job(n);
    const std::string salt = random_hex(8);
    auto out = run_processes(n, [&](int rank) {
      job.apply(rank, 20);
      return connect_and([&](Bootstrap& b) -> std::string {
        for (size_t bytes : {size_t{0}, size_t{1}, size_t{777}, size_t{1} << 20}) {
          auto data = [&](int pe) {
            std::mt19937 g(std::hash<std::string>{}(salt) + pe * 31 + bytes);
            std::string s(bytes, '\0');
            for (auto& c : s) c = static_cast<char>(g());
            return s;
          };
          std::string mine = data(rank), all(bytes * n, '\x5a');
          if (!b.allgather(mine.data(), all.data(), bytes)) return "allgather failed";
          for (int pe = 0; pe < n; ++pe) {
            if (all.compare(pe * bytes, bytes, data(pe)) != 0)
              return "wrong data from PE " + std::to_string(pe);
          }
          std::string buf = rank == n - 1 ? data(100) : std::string(bytes, '\x11');
          if (!b.broadcast(buf.data(), bytes, n - 1) || buf != data(100)) return "bad broadcast";
        }
        return text_of(b.barrier());
      });
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r].text, "ok") << "n=" << n << " PE " << r;
  }
}

TEST(SocketBootstrap, TimeoutNamesThePeThatDidNotArrive) {
  Job job(4);
  auto out = run_processes(4, [&](int rank) {
    job.apply(rank, 2);
    return connect_and([&](Bootstrap& b) -> std::string {
      if (!b.barrier()) return "first barrier failed";
      if (rank == 3) std::this_thread::sleep_for(std::chrono::milliseconds(3000));
      return text_of(b.barrier());
    });
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(out[r].text.find("barrier: timed out after 2 s waiting for PE 3"), std::string::npos)
        << "PE " << r << ": " << out[r].text;
    EXPECT_NE(out[r].text.find("PE " + std::to_string(r) + ":"), std::string::npos) << out[r].text;
    EXPECT_LT(out[r].seconds, 4.5) << "PE " << r;
  }
  // The late PE is told too, as soon as it arrives, and told that it was the late one (not
  // "waiting for PE 3" as if about another PE).
  EXPECT_NE(out[3].text.find("PE 3: barrier: this PE arrived after PE 0 had given up waiting "
                             "for it"),
            std::string::npos)
      << out[3].text;
}

// Issue 19 item 1: a filesystem bootstrap address must lie in a directory only our user can
// enter; the hub makes that directory when it is missing (a sweep removed it while empty).
TEST(SocketBootstrap, FilesystemAddressMustBeInAPrivateDirectory) {
  auto base = private_base_dir();
  ASSERT_TRUE(base.is_ok()) << base.status().message();
  Job job(2);
  const std::string dir = *base + "/unit-" + random_hex(8);
  job.address = dir + "/bootstrap";
  auto out = run_processes(2, [&](int rank) {
    job.apply(rank, 10);
    return connect_and([](Bootstrap& b) { return text_of(b.barrier()); });
  });
  EXPECT_EQ(out[0].text, "ok");
  EXPECT_EQ(out[1].text, "ok");
  remove_private_dir(dir);
  // Open to others: refused, naming the problem.
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  chmod(dir.c_str(), 0755);
  auto refused = run_processes(1, [&](int) {
    job.apply(0, 2);
    return connect_and([](Bootstrap& b) { return text_of(b.barrier()); });
  });
  EXPECT_NE(refused[0].text.find("mode is not 0700"), std::string::npos) << refused[0].text;
  rmdir(dir.c_str());
}

// Issue 19 item 2: connections that never introduce themselves (from any local process of our
// user; other users are refused at once) cannot hold the hub's descriptors nor keep a PE out.
TEST(SocketBootstrap, StrangersHoldingConnectionsDoNotKeepPesOut) {
  Job job(2);
  auto out = run_processes(3, [&](int i) -> std::string {
    if (i == 0) {
      // The hub, with few descriptors to spare.
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      rl.rlim_cur = 40;
      setrlimit(RLIMIT_NOFILE, &rl);
      job.apply(0, 6);
      return connect_and([](Bootstrap& b) { return text_of(b.barrier()); });
    }
    if (i == 1) {
      // The stranger: as many connections as it can get, one byte each, held open.
      std::vector<int> held;
      const auto until = Clock::now() + std::chrono::milliseconds(1500);
      while (Clock::now() < until) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::memcpy(sa.sun_path + 1, job.address.data() + 1, job.address.size() - 1);
        socklen_t len = offsetof(sockaddr_un, sun_path) + job.address.size();
        if (connect(fd, reinterpret_cast<sockaddr*>(&sa), len) == 0) {
          (void)!send(fd, "V", 1, MSG_NOSIGNAL);
          held.push_back(fd);
        } else {
          close(fd);
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
      // Held past the job's time limit.
      std::this_thread::sleep_for(std::chrono::seconds(6));
      return "held " + std::to_string(held.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    job.apply(1, 6);
    return connect_and([](Bootstrap& b) { return text_of(b.barrier()); });
  });
  EXPECT_EQ(out[0].text, "ok");
  EXPECT_EQ(out[2].text, "ok");
  EXPECT_LT(out[2].seconds, 4.5) << "the real PE was kept out for most of the time limit";
  EXPECT_NE(out[1].text.find("held "), std::string::npos) << out[1].text;
}

TEST(SocketBootstrap, InitTimeoutNamesThePeThatNeverStarted) {
  Job job(3);
  auto out = run_processes(2, [&](int rank) {
    job.apply(rank, 2);
    return connect_and([](Bootstrap& b) { return text_of(b.barrier()); });
  });
  EXPECT_NE(out[0].text.find("init: timed out after 2 s waiting for PE 2 to connect"),
            std::string::npos)
      << out[0].text;
  EXPECT_NE(out[1].text.find("waiting for PE 2 to connect"), std::string::npos) << out[1].text;
}

TEST(SocketBootstrap, DeadPeIsReportedPromptly) {
  Job job(3);
  auto out = run_processes(3, [&](int rank) {
    job.apply(rank, 60);
    return connect_and([&](Bootstrap& b) -> std::string {
      if (!b.barrier()) return "first barrier failed";
      if (rank == 2) _exit(0);  // dies without a word
      return text_of(b.allgather("abcd", std::string(12, ' ').data(), 4));
    });
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(out[r].text.find("PE 2 died"), std::string::npos) << out[r].text;
    EXPECT_LT(out[r].seconds, 5) << "not prompt";
  }
}

TEST(SocketBootstrap, DeadHubIsReportedPromptly) {
  Job job(3);
  auto out = run_processes(3, [&](int rank) {
    job.apply(rank, 60);
    return connect_and([&](Bootstrap& b) -> std::string {
      if (!b.barrier()) return "first barrier failed";
      if (rank == 0) _exit(0);
      return text_of(b.barrier());
    });
  });
  for (int r = 1; r < 3; ++r) {
    EXPECT_NE(out[r].text.find("lost the connection to PE 0"), std::string::npos) << out[r].text;
    EXPECT_LT(out[r].seconds, 5) << "not prompt";
  }
}

TEST(SocketBootstrap, WrongSecretIsRefusedAndTheJobStillForms) {
  Job job(2);
  auto out = run_processes(3, [&](int i) {
    if (i == 1) {
      Job impostor = job;
      impostor.secret = random_hex(32);
      impostor.apply(1, 10);
    } else {
      job.apply(i == 0 ? 0 : 1, 10);
      // The real PE 1 comes after the impostor.
      if (i == 2) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return connect_and([&](Bootstrap& b) -> std::string {
      std::string all(2 * 16, '?'), mine = random_hex(16);
      if (!b.allgather(mine.data(), all.data(), 16)) return "allgather failed";
      return all.substr(b.rank() * 16, 16) == mine ? "ok" : "wrong data";
    });
  });
  EXPECT_NE(out[1].text.find("wrong job secret"), std::string::npos) << out[1].text;
  EXPECT_EQ(out[0].text, "ok");
  EXPECT_EQ(out[2].text, "ok");
}

TEST(SocketBootstrap, ListenerOfAnotherUserNeverSeesTheSecret) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  Job job(2);
  auto out = run_processes(2, [&](int i) -> std::string {
    if (i == 0) {
      // A squatter on the job's abstract name, running as nobody.
      if (setuid(65534) != 0) return "setuid failed";
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::memcpy(sa.sun_path + 1, job.address.data() + 1, job.address.size() - 1);
      socklen_t len = offsetof(sockaddr_un, sun_path) + job.address.size();
      if (bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, 4) != 0) {
        return "bind failed";
      }
      int c = accept(fd, nullptr, nullptr);
      char buf[512];
      ssize_t n = c >= 0 ? recv(c, buf, sizeof(buf), 0) : -1;
      std::string got(buf, n > 0 ? n : 0);
      return got.find(job.secret) == std::string::npos ? "no secret" : "GOT THE SECRET";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    job.apply(1, 3);
    auto b = create_bootstrap({});
    return b ? std::string("connected") : b.status().message();
  });
  EXPECT_NE(out[1].text.find("runs as uid 65534"), std::string::npos) << out[1].text;
  EXPECT_EQ(out[0].text, "no secret");
}

TEST(SocketBootstrap, DisagreeingCollectivesAreReported) {
  Job job(2);
  auto out = run_processes(2, [&](int rank) {
    job.apply(rank, 10);
    return connect_and([&](Bootstrap& b) -> std::string {
      if (rank == 0) return text_of(b.barrier());
      char in[8] = {}, all[16];
      return text_of(b.allgather(in, all, 8));
    });
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(out[r].text.find("PEs disagree: PE 1 called allgather(8 bytes)"), std::string::npos)
        << out[r].text;
  }
}

TEST(Topology, NodeIdSimulatesTwoNodes) {
  Job job(5);
  // PEs 0, 2, 4 on node "a"; 1, 3 on node "b".
  auto out = run_processes(5, [&](int rank) {
    job.apply(rank, 10);
    setenv("VSHMEM_NODE_ID", rank % 2 ? "b" : "a", 1);
    (void)config::load();
    return connect_and([&](Bootstrap& b) -> std::string {
      auto t = discover_topology(b);
      if (!t) return t.status().message();
      std::string s = std::to_string(t->n_nodes) + " node" + std::to_string(t->my_node) + " lr" +
                      std::to_string(t->local_rank) + " ls" + std::to_string(t->local_size) +
                      " max" + std::to_string(t->max_local_size) + " pes";
      for (int pe : t->local_pes) s += " " + std::to_string(pe);
      s += " |";
      for (int pe = 0; pe < 5; ++pe) {
        s +=
            " " + std::to_string(t->node_of_pe[pe]) + ":" + std::to_string(t->local_rank_of_pe[pe]);
      }
      return s;
    });
  });
  const std::string all = " | 0:0 1:0 0:1 1:1 0:2";
  EXPECT_EQ(out[0].text, "2 node0 lr0 ls3 max3 pes 0 2 4" + all);
  EXPECT_EQ(out[1].text, "2 node1 lr0 ls2 max3 pes 1 3" + all);
  EXPECT_EQ(out[2].text, "2 node0 lr1 ls3 max3 pes 0 2 4" + all);
  EXPECT_EQ(out[3].text, "2 node1 lr1 ls2 max3 pes 1 3" + all);
  EXPECT_EQ(out[4].text, "2 node0 lr2 ls3 max3 pes 0 2 4" + all);
}

TEST(JobIdentity, SocketJobUsesTheLaunchersIdentity) {
  Job job(2);
  auto out = run_processes(2, [&](int rank) {
    job.apply(rank, 10);
    return connect_and([&](Bootstrap& b) -> std::string {
      auto id = agree_job_identity(b);
      return id ? id->id + "/" + id->secret : id.status().message();
    });
  });
  EXPECT_EQ(out[0].text, job.id + "/" + job.secret);
  EXPECT_EQ(out[1].text, job.id + "/" + job.secret);
}

}  // namespace
}  // namespace vshmem
