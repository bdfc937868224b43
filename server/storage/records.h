// What the store takes and gives back: plain values, independent of the HTTP layer and of the
// wire protocol types (the server maps between the two).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "common/command_enums.h"
#include "common/profiling_mode.h"
#include "server/storage/rollup_records.h"

namespace dormant::server::storage {

using TimePoint = std::chrono::system_clock::time_point;
using Clock = std::function<TimePoint()>;

// Stored with millisecond precision.
int64_t to_unix_ms(TimePoint time);
TimePoint from_unix_ms(int64_t ms);

// The protocol's words, defined once for the wire and the database (common/command_enums.h),
// with their to_string, and the agent's profiling modes.
using ::dormant::CommandType;
using ::dormant::enum_from_string;
using ::dormant::HostStatus;
using ::dormant::parse_profiling_mode;
using ::dormant::ProfilingMode;
using ::dormant::StopLevel;
using ::dormant::TargetScope;
using ::dormant::to_string;
// The server's own (their words: EnumNames below).
enum class CommandStatus { kPending, kSent, kCompleted, kFailed };
enum class RequestStatus { kPending, kAssigned, kCompleted, kFailed, kCancelled };
// What a start or stop request did (or, for a dry run, would do) to one host.
enum class PlanAction {
  kNew,           // the host had no command
  kReplaced,      // the new command replaces one that is over or is a stop
  kMerged,        // a start merged with the host's standing start
  kReducedStart,  // a process stop left some pids: a start for the rest
  kHostStop,      // a host stop, or a process stop that left no pids
  kProcessStop,   // a process stop the store could not subtract (no start with a pid list)
  kUnchanged,     // a process stop of pids the host is not profiling: nothing to do
};

}  // namespace dormant::server::storage

namespace dormant {

template <>
struct EnumNames<server::storage::CommandStatus> {
  static constexpr std::array<std::string_view, 4> kNames = {"pending", "sent", "completed",
                                                             "failed"};
};
template <>
struct EnumNames<server::storage::RequestStatus> {
  static constexpr std::array<std::string_view, 5> kNames = {"pending", "assigned", "completed",
                                                             "failed", "cancelled"};
};
template <>
struct EnumNames<server::storage::PlanAction> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "new", "replaced", "merged", "reduced_start", "host_stop", "process_stop", "unchanged"};
};

}  // namespace dormant

namespace dormant::server::storage {

// The words used in the database and on the wire: "active", "start", "sent", "cpu", "host", ...
constexpr std::optional<HostStatus> parse_host_status(std::string_view text) {
  return enum_from_string<HostStatus>(text);
}
constexpr std::optional<CommandType> parse_command_type(std::string_view text) {
  return enum_from_string<CommandType>(text);
}
constexpr std::optional<CommandStatus> parse_command_status(std::string_view text) {
  return enum_from_string<CommandStatus>(text);
}
constexpr std::optional<RequestStatus> parse_request_status(std::string_view text) {
  return enum_from_string<RequestStatus>(text);
}
constexpr std::optional<StopLevel> parse_stop_level(std::string_view text) {
  return enum_from_string<StopLevel>(text);
}
constexpr std::optional<TargetScope> parse_target_scope(std::string_view text) {
  return enum_from_string<TargetScope>(text);
}

// Sorted, without duplicates. nullopt where a list may stand: the whole host.
using PidList = std::vector<pid_t>;
// hostname -> the pids to act on there, or nullopt for the whole host.
using TargetHosts = std::map<std::string, std::optional<PidList>>;

// One process of a host's inventory; a pid appears once per host.
struct HostProcess {
  int64_t pid = 0;
  std::string process_name;

  friend bool operator==(const HostProcess&, const HostProcess&) = default;
};

// One container of a host's inventory (Studio's heartbeat containers[]).
struct HostContainer {
  std::optional<std::string> container_id;
  std::string container_name;
  std::optional<std::string> runtime;
  std::optional<std::string> pod_namespace;
  std::optional<std::string> pod_name;
  std::optional<std::string> workload_name;
  std::optional<std::string> workload_kind;
  std::vector<HostProcess> processes;

  // The entry an agent of ours lists the processes outside containers under: no id, no name.
  bool outside_containers() const {
    return (!container_id || container_id->empty()) && container_name.empty();
  }

  friend bool operator==(const HostContainer&, const HostContainer&) = default;
};

struct HostHeartbeat {
  std::string hostname;
  std::string service_name;
  std::string ip_address;
  HostStatus status = HostStatus::kActive;
  std::optional<std::string> agent_timestamp;  // the agent's clock, verbatim
  std::optional<std::string> agent_version;
  std::optional<std::string> run_mode;
  std::optional<std::string> last_command_id;
  std::vector<std::string> received_command_ids;
  std::vector<std::string> executed_command_ids;
  std::vector<std::string> perf_supported_events;
  std::vector<HostContainer> containers;  // kept as rows, not in extra
  // Sent in place of containers: the digest of the inventory an earlier answer confirmed. The
  // inventory stored is kept, whether it matches or not.
  std::optional<std::string> containers_digest;
  std::optional<nlohmann::json> agent_health;       // the agent's health report
  nlohmann::json extra = nlohmann::json::object();  // every other field, kept as sent
};

// One target_entities item: every member given must match; those absent match anything.
struct Selector {
  std::optional<std::string> service_name;
  std::optional<std::string> hostname;
  std::optional<std::string> ip_address;
  std::optional<std::string> pod_namespace;
  std::optional<std::string> workload_name;
  std::optional<std::string> workload_kind;
  std::optional<std::string> pod_name;
  std::optional<std::string> container_name;
  std::optional<std::string> process_name;
  std::optional<int64_t> pid;

  friend bool operator==(const Selector&, const Selector&) = default;
};

// One process of a host's inventory with the container around it, as selectors see it.
struct InventoryProcess {
  std::optional<std::string> pod_namespace, workload_name, workload_kind, pod_name;
  std::string container_name;
  std::string process_name;
  pid_t pid = 0;
};

// A host's inventory as selectors resolve against it.
struct HostInventory {
  std::string hostname;
  std::string ip_address;
  std::vector<InventoryProcess> processes;  // in no particular order
};

// Which hosts of a service, and which of their processes, a scope and its selectors pick among
// the hosts heard from within `active_window`. kService: every such host; kHost: those a selector
// names by hostname or ip_address; any narrower scope: the processes of the containers that
// match. A selector for another service picks nothing.
struct TargetQuery {
  std::string service_name;
  TargetScope scope = TargetScope::kHost;
  std::vector<Selector> selectors;
  std::chrono::milliseconds active_window{120'000};
};

// What a subscription selects: a continuous start by selectors stands, and each heartbeat of a
// host of its service gives that host what the selectors pick on it now.
struct SubscriptionSpec {
  TargetScope scope = TargetScope::kService;
  std::vector<Selector> selectors;

  friend bool operator==(const SubscriptionSpec&, const SubscriptionSpec&) = default;
};

struct Subscription {
  std::string subscription_id;
  std::string request_id;  // the continuous start: what its commands run
  std::string service_name;
  SubscriptionSpec spec;
  TimePoint created_at;
  std::optional<TimePoint> ended_at;
  std::optional<std::string> ended_by;  // the stop request that ended it
  std::vector<std::string> opted_out;   // hosts an explicit stop took out of it, sorted
};

// What a heartbeat needs of a subscription, its selectors shared with the cache.
struct HostSubscription {
  std::string request_id;
  TargetScope scope = TargetScope::kService;
  std::shared_ptr<const std::vector<Selector>> selectors;
  TimePoint created_at;
};

struct StartRequest {
  std::optional<std::string> request_id;  // made up by the store when absent
  std::string service_name;
  TargetHosts target_hosts;
  bool continuous = false;
  int64_t duration_s = 60;
  int64_t frequency_hz = 11;
  ProfilingMode mode = ProfilingMode::kCpu;
  // Spread into the top level of combined_config; may not set the keys the store sets itself.
  nlohmann::json additional_args = nlohmann::json::object();
  bool dry_run = false;  // plan, write nothing
  // A continuous start by selectors: the subscription it makes.
  std::optional<SubscriptionSpec> subscribe;
};

struct StopRequest {
  std::optional<std::string> request_id;
  std::string service_name;
  // kProcess needs a pid list for every host; kHost takes none.
  TargetHosts target_hosts;
  StopLevel level = StopLevel::kProcess;
  bool dry_run = false;
  // A stop by selectors ends the subscriptions of its service with the same scope and
  // selectors, and a service-scope stop all of them; a stop of hosts named in target_hosts
  // takes those hosts out of every subscription of the service (opt_out).
  std::optional<SubscriptionSpec> unsubscribe;
  bool opt_out = false;
};

// Where a command stands in a listing (newest first): when it was made, then its row.
struct CommandPosition {
  int64_t created_ms = 0;
  int64_t row = 0;
};

struct Command {
  std::string command_id;
  std::string hostname;
  std::string service_name;
  CommandType type = CommandType::kStart;
  nlohmann::json combined_config = nlohmann::json::object();
  CommandStatus status = CommandStatus::kPending;
  std::vector<std::string> request_ids;
  TimePoint created_at;
  std::optional<TimePoint> sent_at;       // first delivered by a heartbeat
  std::optional<TimePoint> completed_at;  // completion reported
  std::optional<int64_t> execution_time;
  std::optional<std::string> error_message;
  std::optional<std::string> results_path;
  std::optional<std::string> replaced_by;  // nullopt: the host's current command
  std::optional<TimePoint> replaced_at;
  CommandPosition position;  // as read, for a listing's cursor
  // The additional_args object of a start, as stored (each distinct one once).
  std::optional<std::string> args_digest;

  bool is_current() const { return !replaced_by; }
};

// What a command asks of one host, as it is stored and as later requests merge with it.
struct CommandSpec {
  CommandType type = CommandType::kStart;
  std::optional<PidList> pids;          // nullopt: the whole host
  std::optional<StopLevel> stop_level;  // stops, and a start left by a process stop
  // Starts only.
  bool continuous = false;
  int64_t duration_s = 60;
  int64_t frequency_hz = 11;
  ProfilingMode mode = ProfilingMode::kCpu;
  nlohmann::json additional_args = nlohmann::json::object();
};

// A command as stored: what the agent receives and what later requests merge with.
struct CommandRow {
  Command command;
  CommandSpec spec;
};

struct HostPlan {
  std::string hostname;
  PlanAction action = PlanAction::kNew;
  // The new command, nullopt when kUnchanged, without its combined_config: a request for
  // thousands of hosts would hold its arguments once per host (get_command has it). A dry run's
  // has no command_id.
  std::optional<Command> command;
  std::optional<PidList> pids;          // the new command's; nullopt: the whole host, or none
  std::optional<std::string> replaces;  // the command it replaces
  bool heard_from = true;               // the host has a row under the service (host_rows.h)
};

struct SubmitOutcome {
  std::string request_id;
  bool dry_run = false;
  std::vector<HostPlan> hosts;  // in hostname order
};

struct ProfilingRequestRecord {
  std::string request_id;
  std::string service_name;
  CommandType type = CommandType::kStart;
  TargetHosts target_hosts;
  std::optional<bool> continuous;  // starts only
  std::optional<int64_t> duration_s;
  std::optional<int64_t> frequency_hz;
  std::optional<ProfilingMode> mode;
  std::optional<nlohmann::json> additional_args;
  std::optional<StopLevel> stop_level;  // stops only
  RequestStatus status = RequestStatus::kPending;
  TimePoint created_at;
};

struct CompletionReport {
  std::string command_id;
  std::string hostname;
  CommandStatus status = CommandStatus::kCompleted;  // kCompleted or kFailed
  std::optional<int64_t> execution_time;
  std::optional<std::string> error_message;
  std::optional<std::string> results_path;
};

struct CompletionOutcome {
  bool accepted = false;
  std::string message;  // why not, when not accepted
};

// What a heartbeat gets back: the host's current command, if any, and whether this heartbeat is
// the one that delivered it.
struct HeartbeatAnswer {
  std::optional<Command> command;
  bool first_delivery = false;
  // The stored inventory's digest, when it is the one the heartbeat carried.
  std::optional<std::string> containers_digest;
};

struct HostRecord {
  HostHeartbeat last_heartbeat;
  TimePoint first_heartbeat_at;  // server clock
  TimePoint last_heartbeat_at;   // server clock
  std::optional<Command> current_command;
};

// Hosts in (service_name, hostname) order, the first `limit` of them.
// Hosts in order of service, then hostname.
struct HostFilter {
  std::optional<std::string> hostname;
  std::optional<std::string> service_name;
  int64_t limit = 1000;
  std::optional<std::pair<std::string, std::string>> after;  // (service, hostname): a next page
};

struct CommandFilter {
  std::optional<std::string> hostname;
  std::optional<std::string> service_name;
  bool include_history = true;  // false: current commands only
  int64_t limit = 1000;
  std::optional<CommandPosition> before;  // a next page: the commands listed after this one
  // Each command's additional_args left out of its combined_config, named by args_digest alone
  // (Store::get_args reads them): a request's arguments are not read again for each of its hosts.
  bool args_by_digest = false;
};

struct ProfileUpload {
  std::string service_name;
  std::string hostname;
  TimePoint start_time;
  TimePoint end_time;
  std::string collapsed;          // the collapsed file, header line included
  std::optional<double> cpu_avg;  // percent, as the agent measured them
  std::optional<double> mem_avg;
  std::string instance_type;  // the header's cloud_info.instance_type, after its last '/'
  int64_t processors = 0;     // the header's metadata.processors; 0: not given
  ProfileRollup rollup;       // its stacks as the rollups take them
  int64_t samples = 0;
  int64_t idle_samples = 0;  // of the kernel's idle task (profile/idle_stacks.h)
  std::optional<double> cpu_seconds;
};

struct StoredProfile {
  int64_t gpid = 0;
  std::string service_name;
  std::string hostname;
  TimePoint start_time;
  TimePoint end_time;
  TimePoint received_at;
  int64_t raw_size = 0;
  int64_t compressed_size = 0;
  // What the upload held (none for profiles stored before the server counted them): every
  // sample, those of the idle task, and the CPU time its other CPU samples stand for (none where
  // its samples are not clock ticks or its header gives no frequency).
  std::optional<int64_t> samples;
  std::optional<int64_t> idle_samples;
  std::optional<double> cpu_seconds;
};

// Profiles that overlap [since, until]; newest first.
struct ProfileFilter {
  std::optional<std::string> service_name;
  std::optional<std::string> hostname;
  std::optional<TimePoint> since;
  std::optional<TimePoint> until;
  int64_t limit = 100;
};

}  // namespace dormant::server::storage
