#include "profilers/perf/perf_profiler.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include "profilers/perf/perf_script.h"
#include "profilers/perf/pmu_events.h"
#include "profilers/system/cgroup_selection.h"
#include "profilers/system/perf_cgroups.h"
#include "profilers/system/processes.h"

namespace dormant::profilers::perf {
namespace {

constexpr std::chrono::milliseconds kStopGrace{2000};

std::string join(const std::vector<int>& values) {
  std::string text;
  for (int value : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(value);
  }
  return text;
}

// The average number of frames per sample: how deep a table's stacks go.
double average_depth(const profile::StackTable& table) {
  if (table.total_samples() == 0) return 0;
  double frames = 0;
  table.for_each([&](const profile::StackView& stack) {
    frames += static_cast<double>(stack.frame_ids.size() * stack.count);
  });
  return frames / static_cast<double>(table.total_samples());
}

}  // namespace

Result<PerfProfiler::Target> PerfProfiler::choose_target() {
  if (options_.target.use_cgroups) {
    auto picks = system::cgroups_to_profile(
        "perf", system::choose_perf_cgroups(system::cgroup_limits_of(options_.target)));
    if (!picks) return picks.error();
    Target target{{"-a"}, system::perf_cgroup_names(*picks), ""};
    target.description = std::to_string(target.cgroups.size()) + " cgroups";
    return target;
  }
  if (!options_.target.pids.empty()) {
    auto split = system::split_live_pids(options_.target.pids);
    for (int pid : split.gone) spdlog::debug("perf: pid {} is not running, dropped", pid);
    if (split.live.empty()) {
      return Error(ErrorKind::kUnavailable,
                   "perf skipped: none of the processes to profile is running (pids " +
                       join(options_.target.pids) + ")");
    }
    return Target{{"--pid", join(split.live)}, {}, "pids " + join(split.live)};
  }
  return Target{{"-a"}, {}, "whole host"};
}

std::vector<std::string> PerfProfiler::event_and_target_args(const std::string& event,
                                                             const Target& target) {
  std::vector<std::string> args = target.args;
  if (target.cgroups.empty()) {
    args.insert(args.end(), {"-e", event});
  } else {
    auto cgroup_args = system::perf_cgroup_arguments(event, target.cgroups);
    args.insert(args.end(), cgroup_args.begin(), cgroup_args.end());
  }
  return args;
}

Result<std::string> PerfProfiler::discover_event(const Target& target,
                                                 const std::vector<std::string>& candidates) {
  std::string failures;
  int signal_deaths = 0;
  std::string usable;
  for (const std::string& event : candidates) {
    std::filesystem::path data = directory_ / ("trial-" + event + ".data");
    std::vector<std::string> argv = {options_.perf.path,
                                     "record",
                                     "-q",
                                     "-o",
                                     data.string(),
                                     "-F",
                                     std::to_string(options_.target.frequency_hz),
                                     "-g"};
    auto targeted = event_and_target_args(event, target);
    argv.insert(argv.end(), targeted.begin(), targeted.end());
    argv.insert(argv.end(), {"--", "sleep", "0.5"});
    auto recorded =
        run_command(argv, deadline_after(std::chrono::seconds(30)), 1 << 20, &children_);
    std::string outcome;
    if (!recorded && recorded.error().kind() == ErrorKind::kNotFound) {
      return Error(ErrorKind::kUnavailable, "perf is not installed (" + recorded.error().message() +
                                                "): install linux-perf, or run with --perf-mode "
                                                "disabled");
    }
    if (!recorded) {
      outcome = recorded.error().message();
    } else if (recorded->status.signaled) {
      ++signal_deaths;
      outcome = "perf record " + recorded->status.describe();
    } else if (!recorded->status.success()) {
      outcome = "perf record " + recorded->status.describe();
    } else {
      profile::StackTable table;
      PerfScriptParser parser(table);
      auto script =
          run_perf_script(options_.perf.path, data, parser, std::chrono::seconds(30), &children_);
      if (!script) {
        outcome = script.error().message();
      } else if (!script->complete) {
        ++signal_deaths;
        outcome = script->warning;
      } else if (table.total_samples() > 0) {
        std::filesystem::remove(data);
        return event;
      } else if (usable.empty()) {
        usable = event;  // works, but the trial caught no sample (an idle target, say)
      }
    }
    std::filesystem::remove(data);
    if (!outcome.empty()) failures += (failures.empty() ? "" : "; ") + event + ": " + outcome;
  }
  if (!usable.empty()) return usable;
  if (signal_deaths == static_cast<int>(candidates.size())) {
    spdlog::critical(
        "perf died by a signal with every event it tried ({}). This is known to happen on some "
        "GPU hosts; run with --perf-mode disabled to profile without perf",
        failures);
  }
  return Error(ErrorKind::kUnavailable, "perf cannot record on this host: " + failures);
}

Result<void> PerfProfiler::start() {
  if (auto allowed = system::check_process_limit("perf", options_.target.skip_above_processes);
      !allowed) {
    return allowed.error();
  }
  auto candidates = events_to_try(options_.perf.events, pmu_events());
  if (!candidates) return candidates.error();
  auto target = choose_target();
  if (!target) return target.error();

  std::string pattern =
      (options_.temp_root / ("perf-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return Error::from_errno("mkdtemp(" + pattern + ")");
  directory_ = pattern;

  // An event an earlier session recorded with is used without a trial (about a second of perf
  // record), and tried again only if it no longer starts.
  const std::string& known = options_.perf.known_event;
  if (known_event_applies(known, *candidates)) {
    auto started = start_recorders(known, *target);
    if (started) return ok();
    spdlog::info("perf: {} no longer records ({}); trying the events again", known,
                 started.error().message());
    stop_recorders();
  }
  auto event = discover_event(*target, *candidates);
  if (!event) {
    stop();
    return event.error();
  }
  if (auto started = start_recorders(*event, *target); !started) {
    stop();
    return started.error();
  }
  return ok();
}

Result<void> PerfProfiler::start_recorders(const std::string& event, const Target& target) {
  event_ = event;
  record_args_ = event_and_target_args(event_, target);
  record_args_.insert(record_args_.end(), {"-F", std::to_string(options_.target.frequency_hz)});

  std::vector<std::string> dwarf = {"--call-graph",
                                    "dwarf," + std::to_string(options_.perf.dwarf_stack_size)};
  if (options_.perf.call_graph != CallGraph::kDwarf)
    recorders_.push_back({"perf-fp", {"-g"}, nullptr});
  if (options_.perf.call_graph != CallGraph::kFramePointer) {
    recorders_.push_back({"perf-dwarf", dwarf, nullptr});
  }
  for (Recorder& recorder : recorders_) {
    if (auto started = start_recorder(recorder); !started) return started.error();
  }
  spdlog::info("perf: recording {} at {} Hz ({})", event_, options_.target.frequency_hz,
               target.description);
  if (options_.perf.events.size() > 1) {
    spdlog::info(
        "perf: one event per session: {} is the first of those asked for that records here",
        event_);
  }
  return ok();
}

Result<void> PerfProfiler::start_recorder(Recorder& recorder) {
  PerfRecordOptions options;
  options.perf_path = options_.perf.path;
  options.directory = directory_;
  options.name = recorder.name;
  options.groups = &children_;
  options.args = record_args_;
  options.args.insert(options.args.end(), recorder.call_graph_args.begin(),
                      recorder.call_graph_args.end());
  auto record = PerfRecord::start(options);
  if (!record) return record.error();
  recorder.record = std::move(*record);
  return ok();
}

Result<std::map<int, profile::StackTable>> PerfProfiler::collect(Recorder& recorder) {
  auto files = recorder.record->rotate();
  if (!files) return files.error();
  std::map<int, profile::StackTable> per_pid;
  std::optional<Error> failure;
  for (const std::filesystem::path& file : *files) {
    if (!failure) {
      PerfScriptParser parser([&](int pid) -> profile::StackTable& { return per_pid[pid]; });
      auto script = run_perf_script(options_.perf.path, file, parser, options_.perf.script_timeout,
                                    &children_);
      if (!script) {
        failure = script.error();
      } else if (!script->complete) {
        spdlog::warn("{}: {}", recorder.name, script->warning);
        per_pid.clear();
      } else if (script->stats.malformed_lines > 0) {
        spdlog::warn("{}: perf script printed {} lines that are not perf output (first: '{}')",
                     recorder.name, script->stats.malformed_lines,
                     script->stats.first_malformed_line);
      }
    }
    std::filesystem::remove(file);
  }
  if (failure) return *failure;
  return per_pid;
}

void PerfProfiler::restart_if_due(Recorder& recorder) {
  std::string reason;
  if (recorder.record->exited()) {
    reason = "it exited: " + recorder.record->stderr_tail();
  } else if (recorder.record->age() >= options_.perf.restart_after) {
    reason = "it ran for " + std::to_string(options_.perf.restart_after.count()) + " s";
  } else if (recorder.record->rss_bytes() > options_.perf.restart_above_rss_bytes) {
    reason =
        "its memory passed " + std::to_string(options_.perf.restart_above_rss_bytes >> 20) + " MB";
  } else {
    return;
  }
  spdlog::info("{}: restarting perf record because {}", recorder.name, reason);
  recorder.record->stop(kStopGrace);
  recorder.record.reset();
  if (auto started = start_recorder(recorder); !started) {
    spdlog::error("{}: could not restart perf record: {}", recorder.name,
                  started.error().message());
  }
}

Result<profile::StackTable> PerfProfiler::snapshot() {
  if (recorders_.empty()) return Error(ErrorKind::kUnavailable, "perf is not running");
  std::vector<std::map<int, profile::StackTable>> collected;
  std::optional<Error> first_error;
  for (Recorder& recorder : recorders_) {
    if (!recorder.record) {  // its restart failed at the previous snapshot: try again
      if (auto started = start_recorder(recorder); !started && !first_error) {
        first_error = Error(started.error().kind(),
                            recorder.name + " is not running: " + started.error().message());
      }
      continue;
    }
    auto tables = collect(recorder);
    if (tables) {
      collected.push_back(std::move(*tables));
    } else if (!first_error) {
      first_error = tables.error();
    }
    restart_if_due(recorder);
  }
  if (collected.empty() && first_error) return *first_error;

  // With one recorder this merges every process; in smart mode each process takes the
  // recorder whose stacks went deeper.
  std::map<int, const profile::StackTable*> chosen;
  for (const auto& per_pid : collected) {
    for (const auto& [pid, table] : per_pid) {
      auto& best = chosen[pid];
      if (best == nullptr || average_depth(table) > average_depth(*best)) best = &table;
    }
  }
  profile::StackTable merged;
  for (const auto& [pid, table] : chosen) merged.merge(*table, container_names_.of_pid(pid));
  return merged;
}

void PerfProfiler::stop_recorders() {
  for (Recorder& recorder : recorders_) {
    if (recorder.record) recorder.record->stop(kStopGrace);
  }
  recorders_.clear();
  event_.clear();
}

void PerfProfiler::stop() {
  stop_recorders();
  if (!directory_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
    directory_.clear();
  }
}

}  // namespace dormant::profilers::perf
