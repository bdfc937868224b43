#include "wire/command_config.h"

#include <algorithm>

#include "wire/json_fields.h"

namespace dormant::wire {
namespace {

constexpr std::size_t kMaxPerfEvents = 64;

Result<std::string> read_perf_event(const nlohmann::json& value, const std::string& path) {
  Result<std::string> event = read_string(value, path);
  if (!event) return event;
  if (auto name = perf_event_name(*event)) return std::string(*name);
  return field_error(path, single_quoted(*event) + " is not a supported perf event (" +
                               supported_perf_event_names() + ")");
}

// The object form of a profiler's entry: {"mode": <setting>} and/or {"enabled": false}.
template <WireEnum Setting>
void read_switch(FieldReader& fields, Setting& setting, Setting disabled) {
  fields.optional("mode", setting, read_enum<Setting>);
  bool enabled = true;
  fields.optional("enabled", enabled, read_bool);
  if (!enabled) setting = disabled;
}

Result<PerfConfig> read_perf(const nlohmann::json& value, const std::string& path) {
  PerfConfig perf;
  if (value.is_string()) {
    Result<PerfSetting> setting = read_enum<PerfSetting>(value, path);
    if (!setting) return std::move(setting).take_error();
    perf.setting = *setting;
    return perf;
  }
  if (!value.is_object()) {
    return field_error(path, one_of_message<PerfSetting>() + ", or an object {mode, events}");
  }
  FieldReader fields(value, path);
  read_switch(fields, perf.setting, PerfSetting::kDisabled);
  std::vector<std::string> events;
  fields.optional("events", events, list_of(read_perf_event, kMaxPerfEvents));
  if (!events.empty()) {
    perf.events.clear();
    for (std::string& event : events) {
      if (std::ranges::find(perf.events, event) == perf.events.end()) {
        perf.events.push_back(std::move(event));
      }
    }
  }
  return fields.finish(std::move(perf));
}

Result<EbpfSetting> read_ebpf(const nlohmann::json& value, const std::string& path) {
  if (value.is_string()) return read_enum<EbpfSetting>(value, path);
  if (!value.is_object()) {
    return field_error(path, one_of_message<EbpfSetting>() + ", or an object {mode}");
  }
  FieldReader fields(value, path);
  EbpfSetting setting = EbpfSetting::kEnabled;
  read_switch(fields, setting, EbpfSetting::kDisabled);
  return fields.finish(setting);
}

// profiler_configs is kept whole; only the entries of the profilers we run are typed.
void read_profiler_configs(FieldReader& fields, std::string_view key, Presence,
                           CommandConfig& config) {
  const nlohmann::json* configs = fields.object(key);
  if (configs == nullptr) return;
  config.profiler_configs = *configs;
  FieldReader config_fields(*configs, fields.path_of(key));
  config_fields.optional("perf", config.perf, read_perf);
  config_fields.optional("ebpf", config.ebpf, read_ebpf);
  config_fields.optional("gpu", config.gpu, read_enum<GpuMode>);
  if (!config_fields.ok()) fields.fail(config_fields.status().take_error());
}

}  // namespace

const Fields<CommandConfig>& fields_of(std::type_identity<CommandConfig>) {
  using Config = CommandConfig;
  static const Fields<Config> kFields = {
      field("continuous", &Config::continuous, read_bool),
      field("duration", &Config::duration, integer_in(1, kMaxCommandDuration)),
      field("frequency", &Config::frequency, integer_in(1, kMaxFrequency)),
      field("profiling_mode", &Config::profiling_mode, read_enum<ProfilingMode>),
      field("pids", &Config::pids, list_of(integer_in(1, kMaxPid), kMaxListItems)),
      field("stop_level", &Config::stop_level, read_enum<StopLevel>),
      field("profiler_configs", &Config::profiler_configs, read_object)
          .read_by(read_profiler_configs),
      field("target_hostnames", &Config::target_hostnames, list_of(read_string, kMaxListItems)),
  };
  return kFields;
}

bool CommandConfig::applies_to(std::string_view hostname) const {
  return target_hostnames.empty() ||
         std::ranges::find(target_hostnames, hostname) != target_hostnames.end();
}

Result<CommandConfig> parse_combined_config(const nlohmann::json& combined_config,
                                            std::string_view command_type) {
  std::optional<CommandType> type = enum_from_string<CommandType>(command_type);
  if (!type) return field_error("command_type", one_of_message<CommandType>());
  if (Result<void> checked = check_body(combined_config, "combined_config"); !checked) {
    return std::move(checked).take_error();
  }
  CommandConfig config;
  config.command_type = *type;
  FieldReader fields(combined_config, "");
  read_fields(fields, config);
  if (fields.ok() && config.command_type == CommandType::kStop &&
      config.stop_level == StopLevel::kProcess && config.pids.empty()) {
    fields.fail(field_error("pids", "a stop with stop_level 'process' needs pids"));
  }
  return fields.finish(std::move(config));
}

bool turns_profiler_off(const nlohmann::json& entry) {
  if (entry.is_string()) return entry.get_ref<const std::string&>() == "disabled";
  if (!entry.is_object()) return false;
  auto mode = entry.find("mode");
  auto enabled = entry.find("enabled");
  return (mode != entry.end() && mode->is_string() &&
          mode->get_ref<const std::string&>() == "disabled") ||
         (enabled != entry.end() && enabled->is_boolean() && !enabled->get<bool>());
}

}  // namespace dormant::wire
