// Where each snapshot's profile goes: the local directory (-o) and the upload spool (-u).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "agent/local_output.h"
#include "agent/profile_spool.h"
#include "agent/session_plan.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

class SnapshotOutput {
 public:
  // `spool` is null without -u; `spooled` runs after each profile put in it.
  SnapshotOutput(const SessionPlan& plan, std::string hostname, ProfileSpool* spool,
                 std::function<void()> spooled = {});

  // Writes one profile of the samples collected from `start` to `times.end`. Failures are
  // logged; returns whether the profile reached every destination.
  bool write(const module::Snapshot& snapshot, std::chrono::system_clock::time_point start,
             const module::SnapshotTimes& times);

 private:
  std::string hostname_;
  std::optional<LocalOutput> local_;
  ProfileSpool* spool_;
  std::function<void()> spooled_;
};

}  // namespace dormant::agent
