// Where each snapshot's profile goes: the local directory (-o) and the upload spool (-u), and
// the loop that takes a session's snapshots one after another, for heartbeat sessions and local
// runs alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "agent/local_output.h"
#include "agent/profile_spool.h"
#include "common/deadline.h"
#include "common/host_info.h"
#include "config/agent_config.h"
#include "module/api/profiler_module.h"

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

// The facts of this agent and host that every profile header of a session carries.
module::ProfileFacts profile_facts(const config::AgentConfig& config, HostInfo host);

// The upload body (gzip'd ProfileUpload JSON, gpid left for the uploader) for a profile that fits
// in `max_bytes`: when it does not, the stacks with the fewest samples are dropped, and the
// header's "truncated" object says how many stacks and samples went.
struct UploadBody {
  std::string gzip_json;
  size_t dropped_stacks = 0;
};
Result<UploadBody> make_upload_body(const module::Snapshot& snapshot, const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    const module::SnapshotTimes& times,
                                    size_t max_bytes = kMaxUploadBytes);

class SnapshotOutput {
 public:
  // `spool` is null without -u; `spooled` runs after each profile put in it.
  SnapshotOutput(const config::AgentConfig& config, std::string hostname, ProfileSpool* spool,
                 std::function<void()> spooled = {});

  // Writes one profile of the samples collected from `start` to `times.end`. Failures are
  // logged; returns whether the profile reached every destination.
  bool write(const module::Snapshot& snapshot, std::chrono::system_clock::time_point start,
             const module::SnapshotTimes& times);

 private:
  std::string hostname_;
  std::optional<LocalOutput> local_;
  bool flamegraph_;
  ProfileSpool* spool_;
  std::function<void()> spooled_;
};

struct SnapshotLoopResult {
  int snapshots = 0;
  bool all_delivered = true;
};

// Takes a snapshot every `duration` (once unless `continuous`) until `stop_requested(until)`,
// which waits until `until` for a stop, says one came. A stop right after a snapshot leaves no
// empty profile of its own; a stop during a snapshot ends the loop after that snapshot's profile.
SnapshotLoopResult run_snapshot_loop(
    module::ProfilingSession& session, SnapshotOutput& output, std::chrono::seconds duration,
    bool continuous, const std::function<bool(SteadyClock::time_point until)>& stop_requested);

}  // namespace dormant::agent
