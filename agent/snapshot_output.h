// Where each snapshot's profile goes: the local directory (-o) and the upload spool (-u). The
// header is filled here, with this host's facts and the snapshot's metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "agent/local_output.h"
#include "agent/profile_spool.h"
#include "common/host_info.h"
#include "config/agent_config.h"
#include "profile/profile_header.h"
#include "profile/stack_table.h"

namespace dormant::agent {

// Performance Studio refuses a compressed body above 4 MiB; the rest is room for the gpid.
inline constexpr size_t kMaxUploadBytes = (4 << 20) - 4096;

// When the agent process started: the profile header's spawn_time and spawn_uptime_ms.
struct AgentStart {
  double time = 0;  // seconds since the epoch
  uint64_t uptime_ms = 0;
};
// The first call records it; call it early in main().
const AgentStart& agent_start();

// The upload body (gzip'd ProfileUpload JSON, gpid left for the uploader) for a profile that fits
// in `max_bytes`: when it does not, the stacks with the fewest samples are dropped, and the
// header's "truncated" object says how many stacks and samples went.
struct UploadBody {
  std::string gzip_json;
  size_t dropped_stacks = 0;
};
Result<UploadBody> make_upload_body(const profile::StackTable& stacks, nlohmann::json header,
                                    const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    std::chrono::system_clock::time_point end, double cpu_avg,
                                    double mem_avg, size_t max_bytes = kMaxUploadBytes);

class SnapshotOutput {
 public:
  // `spool` is null without -u.
  SnapshotOutput(const config::AgentConfig& config, HostInfo host, ProfileSpool* spool);

  // Writes one profile of the samples collected from `start` to now. Failures are logged;
  // returns whether the profile reached every destination.
  bool write(const profile::StackTable& stacks, std::chrono::system_clock::time_point start,
             double cpu_avg);

 private:
  HostInfo host_;
  profile::SnapshotInfo info_;
  std::optional<LocalOutput> local_;
  ProfileSpool* spool_;
};

}  // namespace dormant::agent
