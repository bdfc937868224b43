// One agent per host: an exclusive flock(2) on a file in a directory only the agent's user may
// change (/run/dormant, or systemd's $RUNTIME_DIRECTORY). The kernel lets go of the lock when the
// process dies, however it dies, so a crash never leaves a stale lock; and no other user can
// take it first, as anyone could bind the abstract socket name gProfiler uses.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant::agent {

class HostLock {
 public:
  // Fails with kUnavailable when another process holds the lock at `path`, and when the
  // directory of `path` is not private (make_private_directory).
  static Result<HostLock> acquire(const std::string& path);

  // $RUNTIME_DIRECTORY/agent.lock under systemd (RuntimeDirectory=), else /run/dormant/agent.lock.
  static std::string default_path();

 private:
  explicit HostLock(UniqueFd file) : file_(std::move(file)) {}
  UniqueFd file_;
};

}  // namespace dormant::agent
