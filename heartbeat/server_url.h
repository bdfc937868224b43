// Where the agent's client connects: a server flag's URL taken apart.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace dormant::heartbeat {

// "https://studio.example:8443/prefix" → where to connect and what to put before each path.
struct ServerUrl {
  bool tls = true;
  std::string host;
  std::string port;       // "443" or "80" when the URL names none
  std::string base_path;  // without a trailing '/': "" or "/prefix"
};
Result<ServerUrl> parse_server_url(std::string_view url);

// "https://studio.example:8443/prefix", "http://[::1]:80": for the log.
std::string to_string(const ServerUrl& server);

}  // namespace dormant::heartbeat
