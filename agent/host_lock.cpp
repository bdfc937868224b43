#include "agent/host_lock.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>

#include "common/private_directory.h"

namespace dormant::agent {

std::string HostLock::default_path() {
  const char* runtime = std::getenv("RUNTIME_DIRECTORY");
  // systemd may list several directories, separated by ':'.
  std::string directory = runtime != nullptr && *runtime != '\0' ? runtime : "/run/dormant";
  directory = directory.substr(0, directory.find(':'));
  return directory + "/agent.lock";
}

Result<HostLock> HostLock::acquire(const std::string& path) {
  std::filesystem::path lock(path);
  if (lock.has_parent_path()) {
    if (auto made = make_private_directory(lock.parent_path()); !made) {
      return Error(ErrorKind::kUnavailable,
                   "the host lock " + path + " is not safe: " + made.error().message());
    }
  }
  UniqueFd file(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!file) return Error::from_errno("open(the host lock " + path + ")");
  if (::flock(file.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Error(ErrorKind::kUnavailable,
                   "another dormant-agent runs on this host (it holds the lock " + path +
                       "); stop it first");
    }
    return Error::from_errno("flock(the host lock " + path + ")");
  }
  return HostLock(std::move(file));
}

}  // namespace dormant::agent
