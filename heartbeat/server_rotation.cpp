#include "heartbeat/server_rotation.h"

#include <spdlog/spdlog.h>

namespace dormant::heartbeat {

std::optional<std::string> failover_reason(const Result<HttpReply>& outcome) {
  if (outcome.ok()) {
    unsigned status = outcome->status;
    if (status == 502 || status == 503 || status == 504) return "HTTP " + std::to_string(status);
    return std::nullopt;
  }
  switch (outcome.error().kind()) {
    case ErrorKind::kNetwork:
    case ErrorKind::kTls:
    case ErrorKind::kTimeout:
      return outcome.error().message();
    default:
      return std::nullopt;
  }
}

bool ServerRotation::after(const Result<HttpReply>& outcome) {
  std::optional<std::string> reason = failover_reason(outcome);
  if (!reason) {
    failures_in_a_row_ = 0;
    return false;
  }
  if (servers_.size() < 2) return false;
  const ServerUrl& failed = current();
  current_ = (current_ + 1) % servers_.size();
  ++failures_in_a_row_;
  spdlog::log(failures_in_a_row_ <= servers_.size() ? spdlog::level::warn : spdlog::level::debug,
              "control server {} failed ({}); next requests go to {}", to_string(failed), *reason,
              to_string(current()));
  return true;
}

}  // namespace dormant::heartbeat
