#include "common/subprocess.h"

#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace dormant {
namespace {

// What the child reports through the error pipe when it cannot exec.
struct ChildFailure {
  int stage;
  int error;
};
enum Stage : int { kStageDup = 1, kStageChdir, kStageExec };

std::string_view stage_name(int stage) {
  switch (stage) {
    case kStageDup:
      return "dup2";
    case kStageChdir:
      return "chdir";
    default:
      return "execve";
  }
}

std::string env_name(std::string_view entry) {
  return std::string(entry.substr(0, entry.find('=')));
}

std::vector<std::string> build_environment(const SpawnOptions& options) {
  std::vector<std::string> result;
  if (options.inherit_env) {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      std::string name = env_name(*entry);
      bool overridden = false;
      for (const std::string& change : options.env) overridden |= env_name(change) == name;
      if (!overridden) result.emplace_back(*entry);
    }
  }
  result.insert(result.end(), options.env.begin(), options.env.end());
  return result;
}

Result<std::string> resolve_program(const std::string& name, const std::vector<std::string>& env) {
  if (name.empty()) return Error::invalid_argument("empty program name");
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& entry : env) {
    if (entry.starts_with("PATH=")) path = entry.substr(5);
  }
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return Error(ErrorKind::kNotFound, name + ": command not found in PATH (" + path + ")", ENOENT);
}

// Moves `fd` above the standard descriptors so that the child's dup2 calls cannot clobber it.
Result<UniqueFd> above_stdio(UniqueFd fd) {
  if (fd.get() > STDERR_FILENO) return fd;
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (moved < 0) return Error::from_errno("fcntl(F_DUPFD_CLOEXEC)");
  return UniqueFd(moved);
}

// The child's end of one standard stream (-1: inherit) and, for a pipe, the parent's end.
struct StreamEnds {
  UniqueFd child;
  UniqueFd parent;
};

Result<StreamEnds> open_stream(const Redirect& redirect, bool for_input) {
  StreamEnds ends;
  switch (redirect.kind) {
    case Redirect::Kind::kInherit:
      return ends;
    case Redirect::Kind::kNull:
      ends.child.reset(::open("/dev/null", (for_input ? O_RDONLY : O_WRONLY) | O_CLOEXEC));
      if (!ends.child) return Error::from_errno("open(/dev/null)");
      break;
    case Redirect::Kind::kFile: {
      int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (redirect.append ? O_APPEND : O_TRUNC);
      ends.child.reset(::open(redirect.path.c_str(), flags, 0600));
      if (!ends.child) return Error::from_errno("open(" + redirect.path.string() + ")");
      break;
    }
    case Redirect::Kind::kPipe: {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno("pipe2");
      ends.parent.reset(fds[0]);
      ends.child.reset(fds[1]);
      auto parent = above_stdio(std::move(ends.parent));
      if (!parent) return parent.error();
      ends.parent = std::move(*parent);
      break;
    }
  }
  auto child = above_stdio(std::move(ends.child));
  if (!child) return child.error();
  ends.child = std::move(*child);
  return ends;
}

[[noreturn]] void child_fail(int error_fd, int stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(error_fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, int error_fd, int release_fd, const int stream_fds[3],
                             const char* cwd, const char* path, char* const* argv,
                             char* const* envp) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int target = 0; target < 3; ++target) {
    if (stream_fds[target] >= 0 && ::dup2(stream_fds[target], target) < 0) {
      child_fail(error_fd, kStageDup);
    }
  }
  if (cwd != nullptr && ::chdir(cwd) != 0) child_fail(error_fd, kStageChdir);
  if (release_fd >= 0) {
    char go = 0;
    ssize_t n;
    do {
      n = ::read(release_fd, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // never released
  }
  // Nothing but 0, 1, 2 and the error pipe (close-on-exec) may reach the program.
  if (error_fd > 3) ::close_range(3, static_cast<unsigned>(error_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(error_fd) + 1, ~0U, 0);
  ::execve(path, argv, envp);
  child_fail(error_fd, kStageExec);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

bool wait_readable(int fd, Deadline deadline) {
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (ready >= 0) return ready > 0;
    if (errno != EINTR) return false;
  }
}

}  // namespace

Result<std::unique_ptr<Subprocess>> Subprocess::spawn(SpawnOptions options) {
  if (options.argv.empty()) return Error::invalid_argument("spawn: empty argv");
  std::vector<std::string> env = build_environment(options);
  auto path = resolve_program(options.argv[0], env);
  if (!path) return path.error();

  auto in = open_stream(options.stdin_inherit ? Redirect::inherit() : Redirect::null(), true);
  if (!in) return in.error();
  auto out = open_stream(options.stdout_to, false);
  if (!out) return out.error();
  auto err = open_stream(options.stderr_to, false);
  if (!err) return err.error();

  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return Error::from_errno("pipe2");
  UniqueFd error_read(error_pipe[0]);
  auto error_write = above_stdio(UniqueFd(error_pipe[1]));
  if (!error_write) return error_write.error();

  UniqueFd release_read, release_write;
  if (options.held) {
    int release_pipe[2];
    if (::pipe2(release_pipe, O_CLOEXEC) != 0) return Error::from_errno("pipe2");
    release_write = UniqueFd(release_pipe[1]);
    auto moved = above_stdio(UniqueFd(release_pipe[0]));
    if (!moved) return moved.error();
    release_read = std::move(*moved);
  }

  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env);
  std::string cwd = options.cwd.string();
  const int stream_fds[3] = {in->child.get(), out->child.get(), err->child.get()};

  // No signal handler of ours may run in the child before it resets them all.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(parent, error_write->get(), release_read ? release_read.get() : -1, stream_fds,
               cwd.empty() ? nullptr : cwd.c_str(), path->c_str(), argv.data(), envp.data());
  }
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return Error::from_errno("fork", fork_errno);

  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  error_write->reset();
  release_read.reset();
  in->child.reset();
  out->child.reset();
  err->child.reset();

  if (!options.held) {
    auto started = await_exec(pid, error_read.get(), cwd, *path, options.argv[0]);
    if (!started) return started.error();
  }

  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    Error error = Error::from_errno("pidfd_open");
    signal_group(pid, SIGKILL);
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return error;
  }
  if (options.groups != nullptr) options.groups->add(pid);
  std::unique_ptr<Subprocess> child(new Subprocess(pid, options.argv[0], options.groups,
                                                   std::move(pidfd), std::move(out->parent),
                                                   std::move(err->parent)));
  if (options.held) {
    child->release_pipe_ = std::move(release_write);
    child->error_pipe_ = std::move(error_read);
    child->held_cwd_ = cwd;
    child->held_path_ = *path;
  }
  return child;
}

Result<void> Subprocess::await_exec(pid_t pid, int error_read, const std::string& cwd,
                                    const std::string& path, const std::string& program) {
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(error_read, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return ok();
  int status;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string call = std::string(stage_name(failure.stage)) + "(" +
                     (failure.stage == kStageChdir ? cwd : path) + ")";
  return Error::from_errno(call, failure.error).with_context("cannot start " + program);
}

Result<void> Subprocess::release() {
  if (!release_pipe_) return Error::invalid_argument("release: the child was not held");
  char go = 1;
  if (::write(release_pipe_.get(), &go, 1) != 1) return Error::from_errno("releasing the child");
  release_pipe_.reset();
  auto started = await_exec(pid_, error_pipe_.get(), held_cwd_, held_path_, program_);
  error_pipe_.reset();
  if (!started) {
    std::lock_guard lock(mutex_);
    exit_ = ExitStatus{.code = 127};  // reaped by await_exec
    if (groups_ != nullptr) groups_->remove(pid_);
  }
  return started;
}

Subprocess::Subprocess(pid_t pid, std::string program, ChildGroups* groups, UniqueFd pidfd,
                       UniqueFd stdout_pipe, UniqueFd stderr_pipe)
    : pid_(pid),
      program_(std::move(program)),
      groups_(groups),
      pidfd_(std::move(pidfd)),
      stdout_pipe_(std::move(stdout_pipe)),
      stderr_pipe_(std::move(stderr_pipe)) {
  if (stdout_pipe_) stdout_reader_ = std::make_unique<LineReader>(stdout_pipe_.get());
}

Subprocess::~Subprocess() {
  std::lock_guard lock(mutex_);
  if (!exit_) kill_group_and_reap_locked();
}

std::optional<ExitStatus> Subprocess::reap_if_exited_locked() {
  if (exit_) return exit_;
  siginfo_t info{};
  // WNOWAIT keeps the zombie, and with it the process group id, until the group is killed.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0) {
    return std::nullopt;
  }
  return kill_group_and_reap_locked();
}

ExitStatus Subprocess::kill_group_and_reap_locked() {
  signal_group(pid_, SIGKILL);
  if (groups_ != nullptr) groups_->remove(pid_);  // while the unreaped leader keeps its group id
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      status = W_EXITCODE(255, 0);  // someone else reaped it; its status is lost
      break;
    }
  }
  exit_ = ExitStatus::from_wait_status(status);
  return *exit_;
}

std::optional<ExitStatus> Subprocess::try_wait() {
  std::lock_guard lock(mutex_);
  return reap_if_exited_locked();
}

Result<ExitStatus> Subprocess::wait(Deadline deadline) {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (auto status = reap_if_exited_locked()) return *status;
    }
    if (!wait_readable(pidfd_.get(), deadline)) {
      return Error(ErrorKind::kTimeout,
                   program_ + " (pid " + std::to_string(pid_) + ") is still running");
    }
  }
}

ExitStatus Subprocess::terminate(std::chrono::milliseconds grace) {
  std::lock_guard lock(mutex_);
  if (auto status = reap_if_exited_locked()) return *status;
  signal_group(pid_, SIGTERM);
  wait_readable(pidfd_.get(), deadline_after(grace));
  return kill_group_and_reap_locked();
}

void Subprocess::append_stderr(std::string_view data) {
  std::lock_guard lock(mutex_);
  stderr_tail_.append(data);
  if (stderr_tail_.size() > 2 * kStderrTailBytes) {
    stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
  }
}

std::string Subprocess::stderr_tail() const {
  std::lock_guard lock(mutex_);
  if (stderr_tail_.size() <= kStderrTailBytes) return stderr_tail_;
  return stderr_tail_.substr(stderr_tail_.size() - kStderrTailBytes);
}

Result<bool> Subprocess::read_stderr_once() {
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(stderr_pipe_.get(), buffer, sizeof(buffer));
    if (n > 0) {
      append_stderr(std::string_view(buffer, static_cast<size_t>(n)));
      return true;
    }
    if (n == 0) {
      stderr_pipe_.reset();
      return false;
    }
    if (errno != EINTR) return Error::from_errno("read(stderr of " + program_ + ")");
  }
}

Result<void> Subprocess::drain_stderr(Deadline deadline) {
  while (stderr_pipe_) {
    if (!wait_readable(stderr_pipe_.get(), deadline)) {
      return Error(ErrorKind::kTimeout, program_ + " kept its stderr open past the deadline");
    }
    auto more = read_stderr_once();
    if (!more) return more.error();
  }
  return ok();
}

Result<std::optional<std::string_view>> Subprocess::next_stdout_line(Deadline deadline) {
  if (!stdout_reader_) return Error::invalid_argument(program_ + ": stdout is not a pipe");
  return stdout_reader_->next(deadline);
}

Result<void> Subprocess::for_each_stdout_line(const std::function<void(std::string_view)>& on_line,
                                              Deadline deadline) {
  if (!stdout_reader_) return Error::invalid_argument(program_ + ": stdout is not a pipe");
  LineReader& reader = *stdout_reader_;
  for (;;) {
    while (auto line = reader.take_line()) on_line(*line);
    if (reader.at_eof()) return ok();
    pollfd fds[2] = {{reader.fd(), POLLIN, 0}, {stderr_pipe_.get(), POLLIN, 0}};
    nfds_t count = stderr_pipe_ ? 2 : 1;
    int ready = ::poll(fds, count, poll_timeout_ms(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("poll");
    }
    if (ready == 0) {
      return Error(ErrorKind::kTimeout, program_ + " (pid " + std::to_string(pid_) +
                                            ") did not finish its output before the deadline");
    }
    if (count == 2 && fds[1].revents != 0) {
      auto more = read_stderr_once();
      if (!more) return more.error();
    }
    if (fds[0].revents != 0) {
      auto filled = reader.fill();
      if (!filled) return filled.error();
    }
  }
}

Result<CommandOutput> run_command(std::vector<std::string> argv, Deadline deadline,
                                  size_t max_output, ChildGroups* groups) {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.groups = groups;
  auto child = Subprocess::spawn(std::move(options));
  if (!child) return child.error();
  Subprocess& process = **child;

  CommandOutput output;
  auto read = process.for_each_stdout_line(
      [&](std::string_view line) {
        if (output.stdout_text.size() + line.size() + 1 > max_output) return;
        output.stdout_text.append(line);
        output.stdout_text.push_back('\n');
      },
      deadline);
  if (read) read = process.drain_stderr(deadline);
  auto status = read ? process.wait(deadline) : Result<ExitStatus>(read.error());
  if (!status) {
    process.terminate(std::chrono::milliseconds(200));
    return status.error();
  }
  output.status = *status;
  output.stderr_text = process.stderr_tail();
  return output;
}

}  // namespace dormant
