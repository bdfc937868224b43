#include "server/storage/records.h"

#include <array>
#include <utility>

namespace dormant::server::storage {
namespace {

template <typename Enum, size_t N>
using Names = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Names<HostStatus, 4> kHostStatuses = {{{HostStatus::kActive, "active"},
                                                 {HostStatus::kIdle, "idle"},
                                                 {HostStatus::kError, "error"},
                                                 {HostStatus::kOffline, "offline"}}};
constexpr Names<CommandType, 2> kCommandTypes = {
    {{CommandType::kStart, "start"}, {CommandType::kStop, "stop"}}};
constexpr Names<CommandStatus, 4> kCommandStatuses = {{{CommandStatus::kPending, "pending"},
                                                       {CommandStatus::kSent, "sent"},
                                                       {CommandStatus::kCompleted, "completed"},
                                                       {CommandStatus::kFailed, "failed"}}};
constexpr Names<RequestStatus, 5> kRequestStatuses = {{{RequestStatus::kPending, "pending"},
                                                       {RequestStatus::kAssigned, "assigned"},
                                                       {RequestStatus::kCompleted, "completed"},
                                                       {RequestStatus::kFailed, "failed"},
                                                       {RequestStatus::kCancelled, "cancelled"}}};
constexpr Names<StopLevel, 2> kStopLevels = {
    {{StopLevel::kProcess, "process"}, {StopLevel::kHost, "host"}}};
constexpr Names<PlanAction, 7> kPlanActions = {{{PlanAction::kNew, "new"},
                                                {PlanAction::kReplaced, "replaced"},
                                                {PlanAction::kMerged, "merged"},
                                                {PlanAction::kReducedStart, "reduced_start"},
                                                {PlanAction::kHostStop, "host_stop"},
                                                {PlanAction::kProcessStop, "process_stop"},
                                                {PlanAction::kUnchanged, "unchanged"}}};
constexpr Names<TargetScope, 7> kTargetScopes = {{{TargetScope::kHost, "host"},
                                                  {TargetScope::kService, "service"},
                                                  {TargetScope::kNamespace, "namespace"},
                                                  {TargetScope::kWorkload, "workload"},
                                                  {TargetScope::kPod, "pod"},
                                                  {TargetScope::kContainer, "container"},
                                                  {TargetScope::kProcess, "process"}}};

template <typename Enum, size_t N>
std::string_view name_of(const Names<Enum, N>& names, Enum value) {
  for (const auto& [candidate, name] : names) {
    if (candidate == value) return name;
  }
  return "unknown";
}

template <typename Enum, size_t N>
std::optional<Enum> value_of(const Names<Enum, N>& names, std::string_view text) {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace

int64_t to_unix_ms(TimePoint time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

TimePoint from_unix_ms(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

std::string_view to_string(HostStatus status) { return name_of(kHostStatuses, status); }
std::string_view to_string(CommandType type) { return name_of(kCommandTypes, type); }
std::string_view to_string(CommandStatus status) { return name_of(kCommandStatuses, status); }
std::string_view to_string(RequestStatus status) { return name_of(kRequestStatuses, status); }
std::string_view to_string(StopLevel level) { return name_of(kStopLevels, level); }
std::string_view to_string(PlanAction action) { return name_of(kPlanActions, action); }
std::string_view to_string(TargetScope scope) { return name_of(kTargetScopes, scope); }

std::optional<HostStatus> parse_host_status(std::string_view text) {
  return value_of(kHostStatuses, text);
}
std::optional<CommandType> parse_command_type(std::string_view text) {
  return value_of(kCommandTypes, text);
}
std::optional<CommandStatus> parse_command_status(std::string_view text) {
  return value_of(kCommandStatuses, text);
}
std::optional<RequestStatus> parse_request_status(std::string_view text) {
  return value_of(kRequestStatuses, text);
}
std::optional<StopLevel> parse_stop_level(std::string_view text) {
  return value_of(kStopLevels, text);
}
std::optional<TargetScope> parse_target_scope(std::string_view text) {
  return value_of(kTargetScopes, text);
}

}  // namespace dormant::server::storage
