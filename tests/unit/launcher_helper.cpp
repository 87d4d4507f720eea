// A stand-in PE for the vshmemrun tests; what it does is chosen by its arguments:
//   env                      print the launcher's variables
//   exit RANK CODE           PE RANK exits with CODE (after the others are running), others sleep
//   signal RANK SIG          PE RANK raises SIG, others sleep
//   stubborn RANK CODE       PE RANK exits with CODE; the others ignore SIGTERM and sleep
//   stdin                    print how many bytes of stdin this PE read and the first line
//   lines K                  print K lines on stdout and K on stderr
//   sleep                    print the pid, then sleep (for signal forwarding tests)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const char* rank_s = std::getenv("VSHMEM_RANK");
  const int rank = rank_s ? std::atoi(rank_s) : -1;
  std::string mode = argc > 1 ? argv[1] : "";
  auto env = [](const char* n) {
    const char* v = std::getenv(n);
    return std::string(v ? v : "<unset>");
  };
  if (mode == "env") {
    std::printf("rank=%s npes=%s local_rank=%s local_size=%s device=%s bootstrap=%s job=%s\n",
                env("VSHMEM_RANK").c_str(), env("VSHMEM_NPES").c_str(),
                env("VSHMEM_LOCAL_RANK").c_str(), env("VSHMEM_LOCAL_SIZE").c_str(),
                env("VSHMEM_DEVICE").c_str(), env("VSHMEM_BOOTSTRAP").c_str(),
                env("VSHMEM_JOB_ID").c_str());
    return 0;
  }
  if (mode == "exit" || mode == "signal" || mode == "stubborn") {
    const int who = std::atoi(argv[2]);
    const int what = std::atoi(argv[3]);
    if (rank == who) {
      usleep(200 * 1000);
      if (mode == "signal") raise(what);
      return what;
    }
    if (mode == "stubborn") signal(SIGTERM, SIG_IGN);
    for (int i = 0; i < 600; ++i) usleep(100 * 1000);
    return 0;
  }
  if (mode == "stdin") {
    std::string all, line;
    char buf[4096];
    ssize_t n;
    while ((n = read(0, buf, sizeof(buf))) > 0) all.append(buf, n);
    line = all.substr(0, all.find('\n'));
    std::printf("read %zu bytes: '%s'\n", all.size(), line.c_str());
    return 0;
  }
  if (mode == "lines") {
    const int k = std::atoi(argv[2]);
    for (int i = 0; i < k; ++i) {
      std::printf("out %d of PE %d\n", i, rank);
      std::fprintf(stderr, "err %d of PE %d\n", i, rank);
    }
    std::printf("no newline at the end");
    return 0;
  }
  if (mode == "sleep") {
    std::printf("pid %d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
    for (int i = 0; i < 600; ++i) usleep(100 * 1000);
    return 0;
  }
  std::fprintf(stderr, "launcher_helper: unknown mode '%s'\n", mode.c_str());
  return 99;
}
