// The perf system profiler: `perf record` as a managed child, one rotated perf.data per
// snapshot, streamed through `perf script` into a StackTable.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/profiling_settings.h"
#include "inventory/container_metadata.h"
#include "profilers/perf/perf_record.h"
#include "profilers/profiler.h"
#include "profilers/system/cgroup_selection.h"

namespace dormant::profilers::perf {

struct PerfProfilerOptions {
  ProfilingTarget target;  // pids empty: the whole host (or the busiest cgroups)
  PerfSettings perf;
  std::filesystem::path docker_root = "/var/lib/docker";  // where docker keeps container names
  // Where perf.data goes, in a directory perf-PID-XXXXXX of its own.
  std::filesystem::path temp_root = std::filesystem::temp_directory_path();
};

class PerfProfiler final : public Profiler {
 public:
  explicit PerfProfiler(PerfProfilerOptions options)
      : options_(std::move(options)), container_names_(options_.docker_root) {}
  ~PerfProfiler() override { stop(); }

  std::string_view name() const override { return "perf"; }
  Result<void> start() override;
  Result<profile::StackTable> snapshot() override;
  void stop() override;
  void abort() override { children_.kill_all(); }

  // The event start() settled on ("cpu-clock", "cycles"); empty when not recording.
  std::string_view event() const override { return event_; }

 private:
  struct Recorder {
    std::string name;  // perf-fp, perf-dwarf
    std::vector<std::string> call_graph_args;
    std::unique_ptr<PerfRecord> record;
  };

  // What perf watches: the whole host, some pids, or some cgroups.
  struct Target {
    std::vector<std::string> args;     // "-a" or "--pid N,M"
    std::vector<std::string> cgroups;  // -G names; each needs its own -e
    std::string description;
  };
  Result<Target> choose_target();
  static std::vector<std::string> event_and_target_args(const std::string& event,
                                                        const Target& target);
  // A trial recording with each of `candidates` in turn: the first that records samples, else
  // the first that records at all.
  Result<std::string> discover_event(const Target& target,
                                     const std::vector<std::string>& candidates);
  // Starts perf-fp and/or perf-dwarf on `event`; on failure, those started are left to
  // stop_recorders().
  Result<void> start_recorders(const std::string& event, const Target& target);
  Result<void> start_recorder(Recorder& recorder);
  void stop_recorders();
  // One rotation of one recorder, parsed into a table per pid.
  Result<std::map<int, profile::StackTable>> collect(Recorder& recorder);
  void restart_if_due(Recorder& recorder);

  PerfProfilerOptions options_;
  ChildGroups children_;  // every perf this profiler runs, for abort(); outlives them
  std::filesystem::path directory_;
  std::vector<std::string> record_args_;  // event, frequency and target
  std::string event_;
  std::vector<Recorder> recorders_;
  inventory::ContainerNames container_names_;
};

}  // namespace dormant::profilers::perf
