#include "agent/host_lock.h"

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <sys/socket.h>
#include <sys/un.h>

namespace dormant::agent {

Result<HostLock> HostLock::acquire(const std::string& name) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof(address.sun_path)) {
    return Error::invalid_argument("host lock name must be 1-" +
                                   std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
  UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) return Error::from_errno("socket(AF_UNIX)");
  auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    if (errno == EADDRINUSE) {
      return Error(ErrorKind::kUnavailable,
                   "another dormant-agent runs on this host (it holds the lock '" + name +
                       "'); stop it first");
    }
    return Error::from_errno("bind(the host lock '" + name + "')");
  }
  return HostLock(std::move(socket));
}

}  // namespace dormant::agent
