#include "agent/snapshot_loop.h"

#include "agent/session_timeline.h"
#include "common/host_info.h"

namespace dormant::agent {

SnapshotLoopResult run_snapshot_loop(
    module::ProfilingSession& session, SnapshotOutput& output, const SessionPlan& plan,
    const std::function<bool(SteadyClock::time_point until)>& stop_requested) {
  SnapshotLoopResult result;
  SessionTimeline timeline;
  bool stopping = stop_requested(SteadyClock::now());
  while (!stopping) {
    auto begin = timeline.now();
    HostUsageMeter usage;
    stopping = stop_requested(SteadyClock::now() + plan.snapshot_every) || !plan.continuous;
    module::SnapshotTimes times;
    times.cpu_avg = usage.cpu_percent();
    times.mem_avg = HostUsageMeter::memory_percent();
    times.end = timeline.now();
    times.last = stopping;
    auto snapshot = session.snapshot(times);
    stopping = stopping || stop_requested(SteadyClock::now());
    if (snapshot->samples() > 0 || !stopping || result.snapshots == 0) {
      result.all_delivered = output.write(*snapshot, begin, times) && result.all_delivered;
    }
    ++result.snapshots;
  }
  return result;
}

}  // namespace dormant::agent
