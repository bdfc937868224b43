#include "module/profiler_set.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace dormant::module {

ProfilerSet ProfilerSet::start(std::vector<std::unique_ptr<profilers::Profiler>> built,
                               std::chrono::milliseconds stop_deadline) {
  ProfilerSet set;
  std::vector<std::unique_ptr<profilers::Profiler>> failed;
  for (auto& profiler : built) {
    Result<void> started = Error(ErrorKind::kSystem, "start() threw");
    try {
      started = profiler->start();
    } catch (const std::exception& thrown) {
      started = Error(ErrorKind::kSystem, std::string("start() threw: ") + thrown.what());
    }
    // Named after start(): a profiler with fallbacks is named after the one that runs.
    ProfilerOutcome outcome{.name = std::string(profiler->name()), .running = true};
    if (started) {
      outcome.event = std::string(profiler->event());
      set.running_.push_back(std::move(profiler));
    } else {
      bool skipped = started.error().kind() == ErrorKind::kUnavailable;
      spdlog::log(profiler->optional() ? spdlog::level::info
                  : skipped            ? spdlog::level::warn
                                       : spdlog::level::err,
                  "{}: {}", outcome.name, started.error().message());
      outcome.running = false;
      outcome.marks_profiles = !profiler->optional();
      outcome.reason = started.error().message();
      failed.push_back(std::move(profiler));
    }
    set.outcomes_.push_back(std::move(outcome));
  }
  if (!failed.empty()) (void)stop_profilers(std::move(failed), stop_deadline);
  return set;
}

ProfilerSet::~ProfilerSet() {
  if (!running_.empty()) stop(std::chrono::seconds(10));
}

profile::StackTable ProfilerSet::snapshot(bool last) {
  profile::StackTable stacks;
  for (auto& profiler : running_) {
    if (last) profiler->before_last_snapshot();
    auto snapshot = profiler->snapshot();
    if (snapshot) {
      stacks.merge(*snapshot);
    } else {
      spdlog::error("{}: {}", profiler->name(), snapshot.error().message());
      profilers::add_profiling_marker(stacks, profiler->name(), snapshot.error().message());
    }
    auto outcome = std::find_if(outcomes_.begin(), outcomes_.end(), [&](const auto& outcome) {
      return outcome.running && outcome.name == profiler->name();
    });
    if (outcome != outcomes_.end()) outcome->facts = profiler->header_facts();
  }
  for (const auto& outcome : outcomes_) {
    if (!outcome.running && outcome.marks_profiles) {
      profilers::add_profiling_marker(stacks, outcome.name, outcome.reason);
    }
  }
  return stacks;
}

TeardownReport ProfilerSet::stop(std::chrono::milliseconds deadline) {
  auto report = stop_profilers(std::move(running_), deadline);
  running_.clear();
  return report;
}

}  // namespace dormant::module
