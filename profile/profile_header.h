// The JSON header of a collapsed profile: the fields Performance Studio validates (metadata),
// the snapshot's host metrics and the containers seen.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/host_info.h"

namespace dormant::profile {

struct SnapshotInfo {
  std::string agent_version;
  double spawn_time = 0;         // seconds since the epoch when the agent started
  uint64_t spawn_uptime_ms = 0;  // host uptime when the agent started
  std::string run_mode = "standalone_executable";
  nlohmann::json run_arguments = nlohmann::json::object();
  std::string profiling_mode = "cpu";
  double cpu_avg = 0;  // host CPU percent over the snapshot
  double mem_avg = 0;  // host memory percent
  std::vector<std::string> containers;
  std::chrono::system_clock::time_point current_time = std::chrono::system_clock::now();
};

nlohmann::json make_profile_header(const HostInfo& host, const SnapshotInfo& snapshot);

// The sampling frequency a header gives (metadata.run_arguments.frequency, a whole number or the
// text of one, as some agents send it); 0 when it gives none.
uint64_t header_frequency(const nlohmann::json& header);

}  // namespace dormant::profile
