#include "heartbeat/server_url.h"

#include <charconv>

namespace dormant::heartbeat {

Result<ServerUrl> parse_server_url(std::string_view url) {
  ServerUrl server;
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    server.tls = false;
    rest = url.substr(7);
  } else {
    return Error::invalid_argument("server URL '" + std::string(url) +
                                   "' must start with https:// (or http://)");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (path.ends_with('/')) path.remove_suffix(1);
  if (authority.find('@') != std::string_view::npos || path.find_first_of("?#") != path.npos) {
    return Error::invalid_argument("server URL '" + std::string(url) +
                                   "' may hold a host, a port and a path, nothing else");
  }
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {  // [::1]:8443
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Error::invalid_argument("server URL '" + std::string(url) + "': unclosed '['");
    }
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) {
      return Error::invalid_argument("server URL '" + std::string(url) + "': junk after ']'");
    }
    if (!after.empty()) port = after.substr(1);
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty())
    return Error::invalid_argument("server URL '" + std::string(url) + "' has no host");
  if (!port.empty()) {
    unsigned number = 0;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (error != std::errc() || end != port.data() + port.size() || number == 0 || number > 65535) {
      return Error::invalid_argument("server URL '" + std::string(url) + "': bad port '" +
                                     std::string(port) + "'");
    }
  }
  server.host = std::string(host);
  server.port = port.empty() ? (server.tls ? "443" : "80") : std::string(port);
  server.base_path = std::string(path);
  return server;
}

std::string to_string(const ServerUrl& server) {
  std::string host =
      server.host.find(':') != std::string::npos ? "[" + server.host + "]" : server.host;
  return (server.tls ? "https://" : "http://") + host + ":" + server.port + server.base_path;
}

}  // namespace dormant::heartbeat
