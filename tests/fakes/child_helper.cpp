// A child process for the Subprocess tests; the first argument picks what it does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

void ignore_sigterm() { signal(SIGTERM, SIG_IGN); }

pid_t spawn_grandchild() {
  pid_t pid = fork();
  if (pid == 0) {
    ignore_sigterm();
    sleep_forever();
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string arg = argc > 2 ? argv[2] : "";
  if (mode == "exit") return std::atoi(arg.c_str());
  if (mode == "segv") {
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  }
  if (mode == "sleep") {
    std::puts("ready");
    std::fflush(stdout);
    sleep_forever();
  }
  if (mode == "ignore-term") {
    ignore_sigterm();
    std::puts("ready");
    std::fflush(stdout);
    sleep_forever();
  }
  if (mode == "grandchild" || mode == "exit-leaving-grandchild") {
    std::printf("%d\n", spawn_grandchild());
    std::fflush(stdout);
    if (mode == "exit-leaving-grandchild") return 0;
    sleep_forever();
  }
  if (mode == "print") {  // arg bytes of 100-byte lines on stdout
    long long total = std::atoll(arg.c_str());
    char line[100];
    std::memset(line, 'x', sizeof(line));
    line[99] = '\n';
    for (long long written = 0; written < total; written += sizeof(line)) {
      fwrite(line, 1, sizeof(line), stdout);
    }
    return 0;
  }
  if (mode == "stderr") {  // arg lines on stderr, then "done" on stdout
    int lines = std::atoi(arg.c_str());
    for (int i = 0; i < lines; ++i) std::fprintf(stderr, "err line %d\n", i);
    std::puts("done");
    return 3;
  }
  if (mode == "fds") {
    DIR* dir = opendir("/proc/self/fd");
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == dirfd(dir)) continue;
      std::puts(entry->d_name);
    }
    closedir(dir);
    return 0;
  }
  if (mode == "env") {
    const char* value = std::getenv(arg.c_str());
    std::puts(value != nullptr ? value : "<unset>");
    return 0;
  }
  if (mode == "cwd") {
    char path[4096];
    std::puts(getcwd(path, sizeof(path)));
    return 0;
  }
  if (mode == "stdin") {
    char buffer[64];
    std::printf("%zd\n", read(STDIN_FILENO, buffer, sizeof(buffer)));
    return 0;
  }
  std::fprintf(stderr, "child_helper: unknown mode '%s'\n", mode.c_str());
  return 64;
}
