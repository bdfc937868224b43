#include "tests/support/raw_http.h"

#include <cerrno>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dormant::testing {

UniqueFd connect_from(const char* source, uint16_t port, std::chrono::milliseconds read_limit) {
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // The port is chosen by connect(), which may take one whose last connection (to the same
  // server) waits in TIME_WAIT: a test that opens thousands of connections does not run out.
  int no_port = 1;
  ::setsockopt(socket.get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &no_port, sizeof(no_port));
  if (::bind(socket.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      ::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return UniqueFd();
  }
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(read_limit).count();
  timeval limit{static_cast<time_t>(micros / 1000000), static_cast<suseconds_t>(micros % 1000000)};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  return socket;
}

bool send_text(const UniqueFd& socket, std::string_view text) {
  return ::send(socket.get(), text.data(), text.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(text.size());
}

std::string read_head(const UniqueFd& socket) {
  std::string head;
  char c;
  while (!head.ends_with("\r\n\r\n") && ::read(socket.get(), &c, 1) == 1) head += c;
  return head.ends_with("\r\n\r\n") ? head : "";
}

int status_of(std::string_view head) {
  constexpr std::string_view kVersion = "HTTP/1.1 ";
  if (!head.starts_with(kVersion) || head.size() < kVersion.size() + 3) return 0;
  int status = 0;
  for (char c : head.substr(kVersion.size(), 3)) {
    if (c < '0' || c > '9') return 0;
    status = status * 10 + (c - '0');
  }
  return status;
}

bool closed_by_server(const UniqueFd& socket) {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(socket.get(), buffer, sizeof(buffer));
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

}  // namespace dormant::testing
