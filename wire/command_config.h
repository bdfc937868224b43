// The agent's reading of a command: combined_config (docs/protocol.md) checked and typed, so that
// an invalid command is refused with a reason before anything starts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/perf_events.h"
#include "common/result.h"
#include "wire/limits.h"
#include "wire/message_fields.h"
#include "wire/wire_enums.h"

namespace dormant::wire {

// profiler_configs.perf: a preset name, or {"mode": preset, "events": [...]}.
struct PerfConfig {
  PerfSetting setting = PerfSetting::kEnabledRestricted;
  std::vector<std::string> events = {"cycles"};  // of kPerfEvents' names, without duplicates

  friend bool operator==(const PerfConfig&, const PerfConfig&) = default;
};

// Whether one profiler's entry of profiler_configs, as sent, turns that profiler off: "disabled",
// {"mode": "disabled"} or {"enabled": false}. Members of another type turn nothing off (the
// agent refuses such a command with a reason), so reading one never throws.
bool turns_profiler_off(const nlohmann::json& entry);

struct CommandConfig {
  CommandType command_type = CommandType::kStart;
  bool continuous = false;  // one profile every `duration` until a stop; else a single one
  int duration = 60;        // seconds
  int frequency = 11;       // Hz
  ProfilingMode profiling_mode = ProfilingMode::kCpu;
  std::vector<int> pids;  // empty: the whole host
  // A stop without stop_level stops everything, as gProfiler's does.
  StopLevel stop_level = StopLevel::kHost;
  nlohmann::json profiler_configs = nlohmann::json::object();  // as sent
  std::optional<PerfConfig> perf;             // nullopt: not mentioned, the agent's flags apply
  std::optional<EbpfSetting> ebpf;            // nullopt: not mentioned, the agent's flags apply
  std::optional<GpuMode> gpu;                 // nullopt: not mentioned, the agent's flags apply
  std::vector<std::string> target_hostnames;  // empty: every host

  // Whether the target_hostnames filter lets `hostname` run this command.
  bool applies_to(std::string_view hostname) const;

  friend bool operator==(const CommandConfig&, const CommandConfig&) = default;
};
// The members of combined_config the agent reads (the command_type is the answer's). Written as
// read: profiler_configs as sent.
const Fields<CommandConfig>& fields_of(std::type_identity<CommandConfig>);

// `command_type` is the heartbeat response's (the copy inside combined_config is ignored, as
// are target_scope, target_entities and any key this does not know). Errors name the key:
// "duration: 0 is not between 1 and 86400".
Result<CommandConfig> parse_combined_config(const nlohmann::json& combined_config,
                                            std::string_view command_type);

}  // namespace dormant::wire
