// The loop that takes a session's snapshots one after another, for heartbeat sessions and local
// runs alike.
#pragma once

#include <chrono>
#include <functional>

#include "agent/session_plan.h"
#include "agent/snapshot_output.h"
#include "common/deadline.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

struct SnapshotLoopResult {
  int snapshots = 0;
  bool all_delivered = true;
};

// Takes a snapshot every `plan.snapshot_every` (once unless `plan.continuous`) until
// `stop_requested(until)`,
// which waits until `until` for a stop, says one came. A stop right after a snapshot leaves no
// empty profile of its own; a stop during a snapshot ends the loop after that snapshot's profile.
SnapshotLoopResult run_snapshot_loop(
    module::ProfilingSession& session, SnapshotOutput& output, const SessionPlan& plan,
    const std::function<bool(SteadyClock::time_point until)>& stop_requested);

}  // namespace dormant::agent
