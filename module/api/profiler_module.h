// The one interface between the idle agent and its profiler module (libdormant_profilers.so):
// the agent loads the module when a session starts and unloads it once the last session's
// profilers are torn down. Only the types below cross the boundary: plain settings in, rendered
// profiles and reports out. Objects made by the module (sessions, snapshots) must be destroyed
// before it is unloaded, since their code lives in it.
//
// Both sides are built from this header; the module's entry point returns the build id below,
// and the agent refuses a module whose id differs from its own (another build, another API).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/host_info.h"
#include "common/profiling_settings.h"
#include "common/result.h"

namespace dormant::module {

// What one session profiles, and with what limits (common/profiling_settings.h).
using ::dormant::ProfilingSettings;

// The facts every profile header of a session carries (gProfiler's metadata).
struct ProfileFacts {
  HostInfo host;
  std::string agent_version;
  double spawn_time = 0;         // seconds since the epoch when the agent started
  uint64_t spawn_uptime_ms = 0;  // host uptime when the agent started
  nlohmann::json run_arguments = nlohmann::json::object();
  std::string profiling_mode = "cpu";
};

struct ProfilerOutcome {
  std::string name;
  bool running = false;
  std::string reason{};        // why not, when not running
  bool marks_profiles = true;  // when not running, its profiles carry a marker saying why
  std::string event{};  // what it samples on when running, where that is a choice ("cpu-clock")
  // Its figures as of the session's last snapshot ({"launches": ..} for gpu); null: none.
  nlohmann::json facts = nullptr;
};

struct TeardownReport {
  std::vector<std::string> problems;  // "perf: stop() passed its 10000 ms deadline; its ..."
  std::chrono::milliseconds took{0};
  // A stop() that never returned still runs module code: the module must stay loaded.
  bool abandoned_a_stop = false;
};

// One snapshot's stacks, rendered on demand.
class Snapshot {
 public:
  virtual ~Snapshot() = default;
  virtual uint64_t samples() const = 0;
  // The gProfiler collapsed file: the "# {json}" header line, then one line per stack.
  virtual std::string collapsed() const = 0;
  virtual std::string flamegraph_svg(const std::string& title,
                                     const std::string& subtitle) const = 0;

  // The collapsed file within a destination's limit: `room` says how much of a candidate fits
  // (the limit over its size, 1 or more when it fits whole). When the whole profile does not, the
  // stacks with the fewest samples are dropped, the header says how many, and `room` is asked
  // again.
  struct Fitted {
    std::string collapsed;
    size_t dropped_stacks = 0;
  };
  using Room = std::function<Result<double>(const std::string& collapsed)>;
  virtual Result<Fitted> collapsed_fitting(const Room& room) const = 0;
};

struct SnapshotTimes {
  std::chrono::system_clock::time_point end = std::chrono::system_clock::now();
  double cpu_avg = 0;  // host CPU percent over the snapshot
  double mem_avg = 0;  // host memory percent
  bool last = false;   // the session's last snapshot
};

class ProfilingSession {
 public:
  virtual ~ProfilingSession() = default;
  // Each profiler the settings enable, running or not and why.
  virtual const std::vector<ProfilerOutcome>& outcomes() const = 0;
  virtual bool any_running() const = 0;
  // The samples since start() or the previous snapshot. A profiler that fails leaves a marker
  // stack saying why instead of samples.
  virtual std::unique_ptr<Snapshot> snapshot(const SnapshotTimes& times) = 0;
  // Stops every profiler, each in isolation and within the settings' deadline. Once.
  virtual TeardownReport stop() = 0;
};

class ProfilerModule {
 public:
  virtual ~ProfilerModule() = default;
  // Builds and starts the profilers `settings` enable. Never fails: a profiler that does not
  // start is in outcomes() with its reason.
  virtual std::unique_ptr<ProfilingSession> start_session(const ProfilingSettings& settings,
                                                          const ProfileFacts& facts) = 0;
  // The hardware events this host's PMUs offer, of gProfiler's supported set.
  virtual std::vector<std::string> perf_supported_events() = 0;
};

// What the module's entry point returns; the module keeps it alive while it is loaded.
struct ModuleEntry {
  const char* build_id;
  ProfilerModule* module;
};

}  // namespace dormant::module

// The module's only exported symbol.
#define DORMANT_MODULE_ENTRY_POINT "dormant_profiler_module_v1"
extern "C" const dormant::module::ModuleEntry* dormant_profiler_module_v1();
