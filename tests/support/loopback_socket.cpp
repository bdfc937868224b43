#include "tests/support/loopback_socket.h"

#include <netinet/in.h>
#include <sys/socket.h>

namespace dormant::testing {

LoopbackSocket::LoopbackSocket(Mode mode) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
  if (mode == Mode::kListening) ::listen(fd_.get(), 8);
  socklen_t size = sizeof(address);
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &size);
  port_ = ntohs(address.sin_port);
}

}  // namespace dormant::testing
