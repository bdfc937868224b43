// The servers one client takes turns on (--api-server A,B,...): every request goes to the current
// one; an outcome that says the server is away or cannot serve now moves the next request to the
// next server, round the list. The client does not retry by itself: its callers back off and try
// again, and that attempt goes to the next server. It stays on a server that works.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "heartbeat/https_client.h"
#include "heartbeat/server_url.h"

namespace dormant::heartbeat {

// Why `outcome` says its server is away or overloaded, or nothing when it does not: no connection
// (resolving, connecting, a reset), a failed TLS handshake, a deadline passed (kNetwork, kTls,
// kTimeout), or HTTP 502, 503 or 504. Any other answer, 500 and 4xx included, comes from a
// server that is there; a cancelled request says nothing of the server.
std::optional<std::string> failover_reason(const Result<HttpReply>& outcome);

class ServerRotation {
 public:
  // At least one server.
  explicit ServerRotation(std::vector<ServerUrl> servers) : servers_(std::move(servers)) {}

  const ServerUrl& current() const { return servers_[current_]; }
  size_t size() const { return servers_.size(); }

  // Takes a request's outcome; true when the next request goes to another server. A move is
  // logged as a warning for the first round of failures in a row (each server once), then at
  // debug level: an outage of them all is the callers' to report.
  bool after(const Result<HttpReply>& outcome);

 private:
  std::vector<ServerUrl> servers_;
  size_t current_ = 0;
  size_t failures_in_a_row_ = 0;
};

}  // namespace dormant::heartbeat
