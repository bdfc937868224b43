// The module's side of module/api/profiler_module.h: sessions of profilers built from their
// settings, and the exported entry point the agent looks up after dlopen().
#include "module/api/profiler_module.h"

#include "common/perf_events.h"
#include "module/profiler_set.h"
#include "module/session_builder.h"
#include "module/stack_snapshot.h"

namespace dormant::module {
namespace {

class Session final : public ProfilingSession {
 public:
  Session(const ProfilingSettings& settings, const ProfileFacts& facts)
      : stop_deadline_(settings.stop_deadline),
        facts_(facts),
        profilers_(ProfilerSet::start(build_profilers(settings), settings.stop_deadline)) {}

  const std::vector<ProfilerOutcome>& outcomes() const override { return profilers_.outcomes(); }
  bool any_running() const override { return profilers_.any_running(); }

  std::unique_ptr<Snapshot> snapshot(const SnapshotTimes& times) override {
    profile::StackTable stacks = profilers_.snapshot(times.last);
    nlohmann::json header = profile_header(facts_, times, stacks);
    for (const auto& outcome : profilers_.outcomes()) {
      if (!outcome.facts.is_null()) header[outcome.name] = outcome.facts;
    }
    return std::make_unique<StackSnapshot>(std::move(stacks), std::move(header));
  }

  TeardownReport stop() override { return profilers_.stop(stop_deadline_); }

 private:
  std::chrono::milliseconds stop_deadline_;
  ProfileFacts facts_;
  ProfilerSet profilers_;
};

class Module final : public ProfilerModule {
 public:
  std::unique_ptr<ProfilingSession> start_session(const ProfilingSettings& settings,
                                                  const ProfileFacts& facts) override {
    return std::make_unique<Session>(settings, facts);
  }
  std::vector<std::string> perf_supported_events() override { return pmu_events(); }
};

}  // namespace
}  // namespace dormant::module

extern "C" __attribute__((visibility("default"))) const dormant::module::ModuleEntry*
dormant_profiler_module_v1() {
  static dormant::module::Module module;
  static const dormant::module::ModuleEntry entry{DORMANT_MODULE_BUILD_ID, &module};
  return &entry;
}
