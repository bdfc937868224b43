// Subprocess: the one owner of a child process and of the pipes to it.
//
// The child runs in its own process group, is killed if the thread that spawned it dies
// (PR_SET_PDEATHSIG), and inherits no descriptor but 0, 1 and 2. Destroying a Subprocess in any
// state kills the whole group and reaps the child: no process, zombie or descriptor outlives it.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "common/child_groups.h"
#include "common/deadline.h"
#include "common/exit_status.h"
#include "common/line_reader.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant {

// Where one of the child's standard streams goes.
struct Redirect {
  enum class Kind { kNull, kPipe, kFile, kInherit };
  Kind kind = Kind::kNull;
  std::filesystem::path path;  // kFile
  bool append = false;         // kFile

  static Redirect null() { return {}; }
  static Redirect pipe() { return {Kind::kPipe, {}, false}; }
  static Redirect file(std::filesystem::path path, bool append = false) {
    return {Kind::kFile, std::move(path), append};
  }
  static Redirect inherit() { return {Kind::kInherit, {}, false}; }
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in PATH
  bool inherit_env = true;
  std::vector<std::string> env{};  // "NAME=value": added to, or replacing, the inherited ones
  std::filesystem::path cwd{};     // empty: the parent's
  bool stdin_inherit = false;      // otherwise /dev/null
  Redirect stdout_to = Redirect::pipe();
  Redirect stderr_to = Redirect::pipe();
  ChildGroups* groups = nullptr;  // registers the child's group there while it is unreaped
  // The child waits before exec until release(): its pid is known, and can be profiled, before
  // the program's first instruction. Destroyed unreleased, it never runs the program.
  bool held = false;
};

class Subprocess {
 public:
  static constexpr size_t kStderrTailBytes = 64 * 1024;

  // Starts the child. Fails (with the reason: not found, not executable, bad cwd, ...) without
  // leaving anything behind.
  static Result<std::unique_ptr<Subprocess>> spawn(SpawnOptions options);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }

  // Lets a held child exec the program; the error says why it could not (not found, ...), and
  // the child is reaped then.
  Result<void> release();
  const std::string& program() const { return program_; }

  // The exit status if the child has ended (and is now reaped), without blocking.
  std::optional<ExitStatus> try_wait();
  // Waits for the child to end; a timeout error leaves it running.
  Result<ExitStatus> wait(Deadline deadline = kNoDeadline);
  // SIGTERM to the group, up to `grace` for the child to exit, then SIGKILL to the group; reaps.
  // Safe to call from another thread while one reads the output, and more than once.
  ExitStatus terminate(std::chrono::milliseconds grace);

  // Calls `on_line` for every line of stdout (which must be a pipe) as it arrives, until end of
  // output; meanwhile keeps the last kStderrTailBytes of stderr when that is a pipe. A timeout
  // error when `deadline` passes first; the child keeps running then.
  Result<void> for_each_stdout_line(const std::function<void(std::string_view)>& on_line,
                                    Deadline deadline = kNoDeadline);
  // The end of what the child wrote to a piped stderr (collected while reading stdout, or by
  // drain_stderr()).
  std::string stderr_tail() const;
  // Reads a piped stderr to its end (stdout must not be an unread pipe that could fill).
  Result<void> drain_stderr(Deadline deadline = kNoDeadline);

  // Pull-style reading of a piped stdout, one line at a time (valid until the next call; nullopt
  // at the end). Unlike for_each_stdout_line it does not collect stderr meanwhile.
  Result<std::optional<std::string_view>> next_stdout_line(Deadline deadline = kNoDeadline);

 private:
  Subprocess(pid_t pid, std::string program, ChildGroups* groups, UniqueFd pidfd,
             UniqueFd stdout_pipe, UniqueFd stderr_pipe);
  // Reads the error pipe until exec closes it: the reason the child could not exec (chdir to
  // `cwd` or execve of `path`), if it did not; the child is reaped then.
  static Result<void> await_exec(pid_t pid, int error_read, const std::string& cwd,
                                 const std::string& path, const std::string& program);
  std::optional<ExitStatus> reap_if_exited_locked();
  ExitStatus kill_group_and_reap_locked();
  void append_stderr(std::string_view data);
  Result<bool> read_stderr_once();

  const pid_t pid_;
  const std::string program_;
  ChildGroups* const groups_;
  UniqueFd pidfd_;
  UniqueFd stdout_pipe_;
  UniqueFd stderr_pipe_;
  std::unique_ptr<LineReader> stdout_reader_;
  UniqueFd release_pipe_;  // a held child's: one byte lets it exec
  UniqueFd error_pipe_;    // a held child's: closed by its exec
  std::string held_cwd_;   // a held child's working directory and program file, for release()'s
  std::string held_path_;  // errors

  mutable std::mutex mutex_;  // guards exit_ and stderr_tail_
  std::optional<ExitStatus> exit_;
  std::string stderr_tail_;
};

// Runs a short command to its end, keeping at most `max_output` bytes of stdout.
struct CommandOutput {
  ExitStatus status;
  std::string stdout_text;
  std::string stderr_text;
};
Result<CommandOutput> run_command(std::vector<std::string> argv, Deadline deadline,
                                  size_t max_output = 1 << 20, ChildGroups* groups = nullptr);

}  // namespace dormant
