#include "heartbeat/outage_log.h"

#include <spdlog/spdlog.h>

namespace dormant::heartbeat {

void OutageLog::failed(int failures, const std::string& error,
                       std::chrono::milliseconds retry_in) const {
  if (failures <= 1) {
    spdlog::warn("{} failed: {}; trying again in {:.3g} s, backing off while it fails", what_,
                 error, std::chrono::duration<double>(retry_in).count());
  } else {
    spdlog::debug("{} failed again ({} in a row): {}", what_, failures, error);
  }
}

void OutageLog::recovered(int failures) const {
  if (failures > 0) {
    spdlog::info("{}: the server answers again, after {} failed attempts", what_, failures);
  }
}

}  // namespace dormant::heartbeat
