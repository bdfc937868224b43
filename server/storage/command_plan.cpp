#include "server/storage/command_plan.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace dormant::server::storage {
namespace {

constexpr std::array<std::string_view, 7> kReservedKeys = {
    "command_type", "continuous", "duration", "frequency", "profiling_mode", "pids", "stop_level"};

CommandSpec host_stop() {
  CommandSpec stop;
  stop.type = CommandType::kStop;
  stop.stop_level = StopLevel::kHost;
  return stop;
}

CommandSpec process_stop(const PidList& pids) {
  CommandSpec stop;
  stop.type = CommandType::kStop;
  stop.stop_level = StopLevel::kProcess;
  stop.pids = pids;
  return stop;
}

}  // namespace

bool is_reserved_config_key(std::string_view key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end();
}

nlohmann::json build_combined_config(const CommandSpec& spec) {
  nlohmann::json config = nlohmann::json::object();
  if (spec.type == CommandType::kStart) {
    config = spec.additional_args.is_object() ? spec.additional_args : nlohmann::json::object();
    config["command_type"] = to_string(spec.type);
    config["continuous"] = spec.continuous;
    config["duration"] = spec.duration_s;
    config["frequency"] = spec.frequency_hz;
    config["profiling_mode"] = to_string(spec.mode);
  }
  if (spec.pids) config["pids"] = *spec.pids;
  if (spec.stop_level) config["stop_level"] = to_string(*spec.stop_level);
  return config;
}

bool is_standing_start(const CurrentCommand& current, TimePoint now) {
  if (current.spec.type != CommandType::kStart) return false;
  switch (current.status) {
    case CommandStatus::kPending:
    case CommandStatus::kSent:
      return true;
    case CommandStatus::kCompleted:
      return current.spec.continuous || !current.completed_at ||
             now < *current.completed_at + std::chrono::seconds(current.spec.duration_s);
    case CommandStatus::kFailed:
      return false;
  }
  return false;
}

CommandSpec merge_starts(const CommandSpec& older, const CommandSpec& newer) {
  CommandSpec merged = newer;
  merged.stop_level.reset();
  if (older.pids && newer.pids) {
    PidList pids;
    std::set_union(older.pids->begin(), older.pids->end(), newer.pids->begin(), newer.pids->end(),
                   std::back_inserter(pids));
    merged.pids = std::move(pids);
  } else {
    merged.pids.reset();
  }
  merged.continuous = older.continuous || newer.continuous;
  merged.duration_s = std::max(older.duration_s, newer.duration_s);
  merged.frequency_hz = std::max(older.frequency_hz, newer.frequency_hz);
  merged.additional_args = older.additional_args;
  merged.additional_args.update(newer.additional_args);
  return merged;
}

HostChange plan_start(const CommandSpec& requested, const std::optional<CurrentCommand>& current,
                      TimePoint now) {
  if (!current) return {PlanAction::kNew, requested, false};
  if (is_standing_start(*current, now)) {
    return {PlanAction::kMerged, merge_starts(current->spec, requested), true};
  }
  return {PlanAction::kReplaced, requested, false};
}

HostChange plan_stop(StopLevel level, const std::optional<PidList>& pids,
                     const std::optional<CurrentCommand>& current, TimePoint now) {
  if (level == StopLevel::kHost || !pids) return {PlanAction::kHostStop, host_stop(), false};
  if (!current || !is_standing_start(*current, now) || !current->spec.pids) {
    return {PlanAction::kProcessStop, process_stop(*pids), false};
  }
  const PidList& profiled = *current->spec.pids;
  PidList remaining;
  std::set_difference(profiled.begin(), profiled.end(), pids->begin(), pids->end(),
                      std::back_inserter(remaining));
  if (remaining.size() == profiled.size()) return {PlanAction::kUnchanged, std::nullopt, false};
  if (remaining.empty()) return {PlanAction::kHostStop, host_stop(), false};
  CommandSpec reduced = current->spec;
  reduced.pids = std::move(remaining);
  reduced.stop_level = StopLevel::kProcess;
  return {PlanAction::kReducedStart, std::move(reduced), true};
}

}  // namespace dormant::server::storage
