// Runs a command and prints the CPU time it used with every descendant it reaped:
//   child_cpu PIDFILE COMMAND [ARGS...]  ->  "USER_SECONDS SYS_SECONDS" on stdout
// The command's pid goes to PIDFILE as soon as it runs, for whoever watches it meanwhile.
#include <cstdio>
#include <fstream>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: child_cpu PIDFILE COMMAND [ARGS...]\n");
    return 2;
  }
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) {
    ::execvp(argv[2], argv + 2);
    std::perror(argv[2]);
    ::_exit(127);
  }
  std::ofstream(argv[1]) << child << '\n';
  int status = 0;
  rusage usage{};
  if (::wait4(child, &status, 0, &usage) != child) {
    std::perror("wait4");
    return 2;
  }
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  std::printf("%.6f %.6f\n", seconds(usage.ru_utime), seconds(usage.ru_stime));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
