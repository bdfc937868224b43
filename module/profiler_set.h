// The profilers of one run or session once started: those that run, and why the others do not.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "module/teardown.h"
#include "profile/stack_table.h"
#include "profilers/profiler.h"

namespace dormant::module {

class ProfilerSet {
 public:
  // Starts each of `built` in turn; one that does not start (or throws) is logged (a warning for a
  // skip, an error for a failure), remembered with its reason and stopped like any other, within
  // `stop_deadline`, to release what a half-done start() left.
  static ProfilerSet start(std::vector<std::unique_ptr<profilers::Profiler>> built,
                           std::chrono::milliseconds stop_deadline);

  ProfilerSet(ProfilerSet&&) = default;
  ProfilerSet& operator=(ProfilerSet&&) = default;
  ~ProfilerSet();

  bool any_running() const { return !running_.empty(); }
  const std::vector<ProfilerOutcome>& outcomes() const { return outcomes_; }

  // One snapshot of every running profiler, merged. A profiler that fails its snapshot, or that
  // does not run, leaves gProfiler's "[Profiling NAME: reason]" marker instead of samples. The
  // session's `last` snapshot has all they hold.
  profile::StackTable snapshot(bool last = false);

  // Stops every profiler in isolation (see stop_profilers); afterwards the set is empty.
  TeardownReport stop(std::chrono::milliseconds deadline);

 private:
  ProfilerSet() = default;

  std::vector<std::unique_ptr<profilers::Profiler>> running_;
  std::vector<ProfilerOutcome> outcomes_;
};

}  // namespace dormant::module
