// What a route's handler sees of a request.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/http_server.h"
#include "wire/protocol.h"

namespace dormant::server::api {

// A long-polled heartbeat: its message, parsed once, and what recording it answered, so that
// its answer after the wait delivers the host's command without recording it again.
struct HeldHeartbeat {
  wire::HeartbeatRequest message;
  bool recorded = false;
  std::optional<std::string> containers_digest;  // as the recording answered it
};

struct Call {
  const http::Request& request;
  std::vector<std::string> params;                         // the path segments matched by "{}"
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  const http::Client& client;
  mutable bool news = true;  // set by the heartbeat route
  // The heartbeat route's, where a long-poll holds it.
  HeldHeartbeat* held = nullptr;

  std::string_view query_value(std::string_view name) const {
    for (const auto& [key, value] : query) {
      if (key == name) return value;
    }
    return {};
  }
};

}  // namespace dormant::server::api
