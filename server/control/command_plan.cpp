#include "server/control/command_plan.h"

#include <algorithm>
#include <iterator>

#include "common/uuid.h"

namespace dormant::server::control {
namespace {

CommandSpec host_stop() {
  CommandSpec stop;
  stop.type = storage::CommandType::kStop;
  stop.stop_level = StopLevel::kHost;
  return stop;
}

CommandSpec process_stop(const PidList& pids) {
  CommandSpec stop;
  stop.type = storage::CommandType::kStop;
  stop.stop_level = StopLevel::kProcess;
  stop.pids = pids;
  return stop;
}

}  // namespace

std::optional<CurrentCommand> planning_view(const std::optional<storage::CommandRow>& row) {
  if (!row) return std::nullopt;
  return CurrentCommand{row->spec, row->command.status, row->command.completed_at};
}

bool is_standing_start(const CurrentCommand& current, TimePoint now) {
  if (current.spec.type != storage::CommandType::kStart) return false;
  switch (current.status) {
    case storage::CommandStatus::kPending:
    case storage::CommandStatus::kSent:
      return true;
    case storage::CommandStatus::kCompleted:
      return current.spec.continuous || !current.completed_at ||
             now < *current.completed_at + std::chrono::seconds(current.spec.duration_s);
    case storage::CommandStatus::kFailed:
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

storage::PlannedHost next_command(const std::string& hostname, const std::string& service_name,
                                  const HostChange& change,
                                  const std::optional<storage::CommandRow>& current,
                                  const std::string& request_id, TimePoint now, bool dry_run) {
  storage::PlannedHost planned{
      storage::HostPlan{hostname, change.action, std::nullopt, std::nullopt, std::nullopt},
      std::nullopt};
  if (!change.spec) return planned;
  storage::CommandRow row;
  row.spec = *change.spec;
  storage::Command& command = row.command;
  if (!dry_run) command.command_id = random_uuid();
  command.hostname = hostname;
  command.service_name = service_name;
  command.type = row.spec.type;
  command.status = storage::CommandStatus::kPending;
  command.created_at = now;
  if (change.continues_current_requests && current) {
    // A bounded share: starts merged again and again must not copy a growing list each time.
    const auto& carried = current->command.request_ids;
    size_t skipped = carried.size() > kMaxRequestsPerCommand - 1
                         ? carried.size() - (kMaxRequestsPerCommand - 1)
                         : 0;
    command.request_ids.assign(carried.begin() + static_cast<std::ptrdiff_t>(skipped),
                               carried.end());
  }
  if (std::find(command.request_ids.begin(), command.request_ids.end(), request_id) ==
      command.request_ids.end()) {
    command.request_ids.push_back(request_id);
  }
  if (current) planned.plan.replaces = current->command.command_id;
  planned.plan.command = command;
  planned.plan.pids = row.spec.pids;
  planned.row = std::move(row);
  return planned;
}

}  // namespace dormant::server::control
