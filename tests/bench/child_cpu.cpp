// Runs a command and prints the CPU it cost: its user and system time with every descendant it
// reaped, and the run time of the BPF programs it held (kernel.bpf_stats_enabled must be 1):
//   child_cpu [--term-after SECONDS] COMMAND [ARGS...]
//     -> "USER_SECONDS SYS_SECONDS BPF_SECONDS" on stdout; SIGTERM to the command after SECONDS
// A BPF program runs in the context of whatever task it interrupts, so no rusage holds its time.
// It is read from /proc/PID/fdinfo every 50 ms while the command runs, without starting a
// process: a new process would be work for a profiler under test.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// The run time so far of the BPF programs `pid` holds, in ns.
uint64_t bpf_run_time_ns(pid_t pid) {
  namespace fs = std::filesystem;
  const fs::path process = "/proc/" + std::to_string(pid);
  uint64_t total = 0;
  std::error_code error;
  for (const auto& fd : fs::directory_iterator(process / "fd", error)) {
    std::error_code gone;
    if (fs::read_symlink(fd.path(), gone) != "anon_inode:bpf-prog") continue;
    std::ifstream info(process / "fdinfo" / fd.path().filename());
    std::string line;
    while (std::getline(info, line)) {
      if (line.starts_with("run_time_ns:")) total += std::strtoull(line.c_str() + 12, nullptr, 10);
    }
  }
  return total;
}

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  double term_after = 0;
  if (argc > 2 && std::string(argv[1]) == "--term-after") {
    term_after = std::atof(argv[2]);
    argv += 2;
    argc -= 2;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: child_cpu [--term-after SECONDS] COMMAND [ARGS...]\n");
    return 2;
  }
  const auto started = std::chrono::steady_clock::now();
  bool terminated = false;
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) {
    ::execvp(argv[1], argv + 1);
    std::perror(argv[1]);
    ::_exit(127);
  }
  uint64_t bpf_ns = 0;
  int status = 0;
  rusage usage{};
  for (;;) {
    pid_t done = ::wait4(child, &status, WNOHANG, &usage);
    if (done == child) break;
    if (done < 0) {
      std::perror("wait4");
      return 2;
    }
    // Programs are destroyed before the command exits: the last reading misses at most 50 ms.
    bpf_ns = std::max(bpf_ns, bpf_run_time_ns(child));
    std::chrono::duration<double> ran = std::chrono::steady_clock::now() - started;
    if (term_after > 0 && !terminated && ran.count() >= term_after) {
      ::kill(child, SIGTERM);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("%.6f %.6f %.6f\n", seconds(usage.ru_utime), seconds(usage.ru_stime),
              static_cast<double>(bpf_ns) / 1e9);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
