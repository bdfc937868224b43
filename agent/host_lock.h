// One agent per host: a Unix socket bound to a name in the abstract namespace, as gProfiler does.
// The kernel frees the name when the process dies, however it dies, so a crash never leaves a
// stale lock behind.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant::agent {

class HostLock {
 public:
  // Fails with kUnavailable when another process holds `name`.
  static Result<HostLock> acquire(const std::string& name);

 private:
  explicit HostLock(UniqueFd socket) : socket_(std::move(socket)) {}
  UniqueFd socket_;
};

}  // namespace dormant::agent
