#include "server/api/wire_mapping.h"

#include "common/iso_time.h"
#include "common/text.h"
#include "profile/profile_header.h"
#include "server/storage/subscription_rows.h"

namespace dormant::server::api {
namespace {

// With `empty_is_whole_host`, an empty pid list stands for the whole host, as Studio's
// {"host": []} does for a start.
storage::TargetHosts to_target_hosts(
    const std::map<std::string, std::optional<std::vector<int>>>& hosts,
    bool empty_is_whole_host = false) {
  storage::TargetHosts targets;
  for (const auto& [hostname, pids] : hosts) {
    bool whole = !pids || (empty_is_whole_host && pids->empty());
    targets[hostname] =
        whole ? std::nullopt
              : std::optional<storage::PidList>(storage::PidList(pids->begin(), pids->end()));
  }
  return targets;
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json optional_time(const std::optional<storage::TimePoint>& time) {
  return time ? nlohmann::json(iso_time(*time)) : nlohmann::json(nullptr);
}

nlohmann::json target_hosts_json(const storage::TargetHosts& hosts) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [hostname, pids] : hosts) {
    json[hostname] = pids ? nlohmann::json(*pids) : nlohmann::json(nullptr);
  }
  return json;
}

std::optional<std::string> text_member(const nlohmann::json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

std::vector<storage::HostContainer> host_containers(
    const std::vector<wire::ReportedContainer>& containers) {
  std::vector<storage::HostContainer> rows;
  rows.reserve(containers.size());
  for (const wire::ReportedContainer& reported : containers) {
    storage::HostContainer& row = rows.emplace_back();
    row.container_id = reported.container_id;
    row.container_name = reported.container_name;
    row.runtime = reported.runtime;
    row.pod_namespace = reported.pod_namespace;
    row.pod_name = reported.pod_name;
    row.workload_name = reported.workload_name;
    row.workload_kind = reported.workload_kind;
    row.processes.reserve(reported.processes.size());
    for (const wire::ReportedProcess& process : reported.processes) {
      row.processes.push_back({process.pid, process.process_name});
    }
  }
  return rows;
}

// Studio's workload_status row ids: the row's key members joined with '|' ("" for none).
Result<void> take_row_id(const std::string& id, storage::TargetScope scope,
                         storage::Selector& selector) {
  std::vector<std::string> parts;
  for (std::string_view part : split(id, '|')) parts.emplace_back(part);
  auto part = [&](size_t index) -> std::optional<std::string> {
    if (parts[index].empty()) return std::nullopt;
    return parts[index];
  };
  using storage::TargetScope;
  std::vector<size_t> sizes = {2, 1, 2, 0, 3, 5, 3};
  size_t expected = sizes[static_cast<size_t>(scope)];
  if (expected == 0 || parts.size() != expected) {
    return Error::invalid_argument("'" + id + "' is not the id of a " +
                                   std::string(storage::to_string(scope)) + " row");
  }
  selector.service_name = part(0);
  switch (scope) {
    case TargetScope::kHost:
      selector.hostname = part(1);
      break;
    case TargetScope::kNamespace:
      selector.pod_namespace = part(1);
      break;
    case TargetScope::kPod:
      selector.pod_namespace = part(1);
      selector.pod_name = part(2);
      break;
    case TargetScope::kContainer:
      selector.hostname = part(1);
      selector.pod_namespace = part(2);
      selector.pod_name = part(3);
      selector.container_name = part(4);
      break;
    case TargetScope::kProcess: {
      selector.hostname = part(1);
      auto pid = parse_integer(parts[2]);
      if (!pid || *pid <= 0) return Error::invalid_argument("'" + id + "' names no pid");
      selector.pid = *pid;
      break;
    }
    case TargetScope::kService:
    case TargetScope::kWorkload:
      break;
  }
  return ok();
}

}  // namespace

storage::HostHeartbeat to_host_heartbeat(const wire::HeartbeatRequest& request) {
  storage::HostHeartbeat heartbeat;
  heartbeat.hostname = request.hostname;
  heartbeat.service_name = request.service_name;
  heartbeat.ip_address = request.ip_address;
  heartbeat.status = request.status;
  heartbeat.agent_timestamp = request.timestamp;
  heartbeat.agent_version = request.agent_version;
  heartbeat.run_mode = request.run_mode;
  heartbeat.last_command_id = request.last_command_id;
  heartbeat.received_command_ids = request.received_command_ids;
  heartbeat.executed_command_ids = request.executed_command_ids;
  heartbeat.perf_supported_events = request.perf_supported_events;
  if (!request.agent_health.empty()) heartbeat.agent_health = request.agent_health;
  heartbeat.extra = request.extra;
  heartbeat.containers = host_containers(request.containers);
  heartbeat.containers_digest = request.containers_digest;
  if (request.pod_namespace) heartbeat.extra["namespace"] = *request.pod_namespace;
  if (request.pod_name) heartbeat.extra["pod_name"] = *request.pod_name;
  return heartbeat;
}

wire::HeartbeatResponse to_heartbeat_response(const storage::HeartbeatAnswer& answer) {
  wire::HeartbeatResponse response;
  response.containers_digest = answer.containers_digest;
  const std::optional<storage::Command>& command = answer.command;
  if (!command) {
    response.message = "Heartbeat received. No profiling commands.";
    return response;
  }
  response.message = "Heartbeat received. New profiling command available.";
  response.command_id = command->command_id;
  response.profiling_command = wire::ProfilingCommand{
      std::string(storage::to_string(command->type)), command->combined_config};
  return response;
}

bool selects_by_entities(const wire::ProfilingRequest& request) {
  return !request.target_entities.empty() || request.target_scope != wire::TargetScope::kHost;
}

Result<storage::TargetQuery> to_target_query(const wire::ProfilingRequest& request,
                                             std::chrono::milliseconds active_window) {
  storage::TargetQuery query;
  query.service_name = request.service_name;
  query.scope = request.target_scope;
  query.active_window = active_window;
  for (size_t i = 0; i < request.target_entities.size(); ++i) {
    const nlohmann::json& entity = request.target_entities[i];
    storage::Selector selector = storage::selector_from_json(entity);
    if (auto id = text_member(entity, "id")) {
      if (auto taken = take_row_id(*id, query.scope, selector); !taken) {
        return Error::problem(ErrorKind::kInvalidArgument,
                              "target_entities[" + std::to_string(i) + "].id",
                              taken.error().message());
      }
    }
    query.selectors.push_back(std::move(selector));
  }
  return query;
}

void take_resolved_targets(wire::ProfilingRequest& request, const storage::TargetHosts& targets) {
  request.target_hosts.clear();
  bool whole_hosts = false;
  for (const auto& [hostname, pids] : targets) {
    if (pids) {
      request.target_hosts[hostname] = std::vector<int>(pids->begin(), pids->end());
    } else {
      request.target_hosts[hostname] = std::nullopt;
      whole_hosts = true;
    }
  }
  if (request.request_type == wire::CommandType::kStop) {
    if (whole_hosts) request.stop_level = wire::StopLevel::kHost;
    return;
  }
  if (request.target_scope == wire::TargetScope::kHost) return;
  if (!request.additional_args) request.additional_args = nlohmann::json::object();
  (*request.additional_args)["target_scope"] = wire::to_string(request.target_scope);
}

Result<StoreRequest> to_store_request(const wire::ProfilingRequest& request,
                                      const std::optional<storage::TargetQuery>& selected_by) {
  if (request.target_hosts.empty()) {
    return Error::problem(ErrorKind::kInvalidArgument, "target_hosts",
                          "required (hostname: null for the whole host, or a list of pids)");
  }
  if (request.request_type == wire::CommandType::kStop) {
    storage::StopRequest stop;
    stop.service_name = request.service_name;
    stop.target_hosts = to_target_hosts(request.target_hosts);
    stop.level = request.stop_level;
    stop.dry_run = request.dry_run;
    if (selected_by) {
      stop.unsubscribe = storage::SubscriptionSpec{selected_by->scope, selected_by->selectors};
    } else {
      stop.opt_out = true;
    }
    return StoreRequest(std::move(stop));
  }
  storage::StartRequest start;
  start.service_name = request.service_name;
  start.target_hosts = to_target_hosts(request.target_hosts, /*empty_is_whole_host=*/true);
  start.continuous = request.continuous;
  start.duration_s = request.duration;
  start.frequency_hz = request.frequency;
  start.mode = request.profiling_mode;
  if (request.additional_args) start.additional_args = *request.additional_args;
  start.dry_run = request.dry_run;
  if (selected_by && request.continuous) {
    start.subscribe = storage::SubscriptionSpec{selected_by->scope, selected_by->selectors};
  }
  return StoreRequest(std::move(start));
}

namespace {

// "; never seen: a, b and 3 more (no heartbeat under service 's': each command waits for its
// host's first)", or "" when every host was heard from.
std::string never_seen_note(const std::vector<std::string>& hosts, const std::string& service) {
  if (hosts.empty()) return "";
  constexpr size_t kNamed = 10;
  return "; never seen: " + join_first(hosts, kNamed) + " (no heartbeat under service '" + service +
         "': each command waits for its host's first)";
}

}  // namespace

wire::ProfilingResponse to_profiling_response(const wire::ProfilingRequest& request,
                                              const storage::SubmitOutcome& outcome,
                                              storage::TimePoint now) {
  wire::ProfilingResponse response;
  std::vector<std::string> never_seen;
  for (const storage::HostPlan& host : outcome.hosts) {
    if (!host.heard_from) never_seen.push_back(host.hostname);
  }
  std::string note = never_seen_note(never_seen, request.service_name);
  if (!never_seen.empty()) response.hosts_never_seen = std::move(never_seen);
  bool start = request.request_type == wire::CommandType::kStart;
  size_t changed = 0;
  for (const storage::HostPlan& host : outcome.hosts) {
    if (!host.command) continue;
    ++changed;
    if (!outcome.dry_run) response.command_ids.push_back(host.command->command_id);
  }
  std::string what = start ? "start" : "stop";
  if (outcome.dry_run) {
    response.message =
        "Dry run: the " + what + " request is valid and would change the command of " +
        std::to_string(changed) + " of " + std::to_string(outcome.hosts.size()) + " hosts" + note;
    response.plan = nlohmann::json::array();
    for (const storage::HostPlan& host : outcome.hosts) {
      nlohmann::json pids = nullptr;
      if (host.pids) pids = *host.pids;
      response.plan.push_back({{"hostname", host.hostname},
                               {"action", storage::to_string(host.action)},
                               {"pids", pids}});
    }
    return response;
  }
  response.request_id = outcome.request_id;
  response.message = "Profiling " + what + " request accepted: " + std::to_string(changed) +
                     " new commands for " + std::to_string(outcome.hosts.size()) + " hosts" + note;
  if (start) {
    response.estimated_completion_time = iso_time(now + std::chrono::seconds(request.duration));
  }
  return response;
}

storage::CompletionReport to_completion_report(const wire::CommandCompletion& completion) {
  storage::CompletionReport report;
  report.command_id = completion.command_id;
  report.hostname = completion.hostname;
  report.status = completion.status == wire::CompletionStatus::kCompleted
                      ? storage::CommandStatus::kCompleted
                      : storage::CommandStatus::kFailed;
  report.execution_time = static_cast<int64_t>(completion.execution_time + 0.5);
  report.error_message = completion.error_message;
  report.results_path = completion.results_path;
  return report;
}

nlohmann::json to_json(const storage::Command& command) {
  return {
      {"command_id", command.command_id},
      {"hostname", command.hostname},
      {"service_name", command.service_name},
      {"command_type", storage::to_string(command.type)},
      {"combined_config", command.combined_config},
      {"args_digest", optional_json(command.args_digest)},
      {"status", storage::to_string(command.status)},
      {"request_ids", command.request_ids},
      {"created_at", iso_time(command.created_at)},
      {"sent_at", optional_time(command.sent_at)},
      {"completed_at", optional_time(command.completed_at)},
      {"execution_time",
       command.execution_time ? nlohmann::json(*command.execution_time) : nlohmann::json(nullptr)},
      {"error_message", optional_json(command.error_message)},
      {"results_path", optional_json(command.results_path)},
      {"current", command.is_current()},
      {"replaced_by", optional_json(command.replaced_by)},
      {"replaced_at", optional_time(command.replaced_at)},
  };
}

nlohmann::json to_json(const storage::HostRecord& host) {
  const storage::HostHeartbeat& last = host.last_heartbeat;
  nlohmann::json json = {
      {"hostname", last.hostname},
      {"service_name", last.service_name},
      {"ip_address", last.ip_address},
      {"status", storage::to_string(last.status)},
      {"agent_version", optional_json(last.agent_version)},
      {"run_mode", optional_json(last.run_mode)},
      {"agent_timestamp", optional_json(last.agent_timestamp)},
      {"first_heartbeat_at", iso_time(host.first_heartbeat_at)},
      {"last_heartbeat_at", iso_time(host.last_heartbeat_at)},
      {"last_command_id", optional_json(last.last_command_id)},
      {"perf_supported_events", last.perf_supported_events},
      {"agent_health", last.agent_health ? *last.agent_health : nlohmann::json(nullptr)},
      {"extra", last.extra},
      {"current_command",
       host.current_command ? to_json(*host.current_command) : nlohmann::json(nullptr)},
  };
  return json;
}

nlohmann::json to_json(const storage::StoredProfile& profile) {
  std::string base = "/api/profiles/" + std::to_string(profile.gpid);
  return {
      {"gpid", profile.gpid},
      {"service_name", profile.service_name},
      {"hostname", profile.hostname},
      {"start_time", iso_time(profile.start_time)},
      {"end_time", iso_time(profile.end_time)},
      {"received_at", iso_time(profile.received_at)},
      {"raw_size", profile.raw_size},
      {"compressed_size", profile.compressed_size},
      {"samples", optional_json(profile.samples)},
      {"idle_samples", optional_json(profile.idle_samples)},
      {"cpu_seconds", optional_json(profile.cpu_seconds)},
      {"collapsed_url", base + "/collapsed"},
      {"flamegraph_url", base + "/flamegraph"},
  };
}

nlohmann::json to_json(const storage::ProfilingRequestRecord& request) {
  nlohmann::json json = {
      {"request_id", request.request_id},
      {"service_name", request.service_name},
      {"request_type", storage::to_string(request.type)},
      {"target_hosts", target_hosts_json(request.target_hosts)},
      {"status", storage::to_string(request.status)},
      {"created_at", iso_time(request.created_at)},
  };
  if (request.continuous) json["continuous"] = *request.continuous;
  if (request.duration_s) json["duration"] = *request.duration_s;
  if (request.frequency_hz) json["frequency"] = *request.frequency_hz;
  if (request.mode) json["profiling_mode"] = storage::to_string(*request.mode);
  if (request.additional_args) json["additional_args"] = *request.additional_args;
  if (request.stop_level) json["stop_level"] = storage::to_string(*request.stop_level);
  return json;
}

std::string iso_time(storage::TimePoint time) { return iso_utc(time, /*with_millis=*/true) + "Z"; }

}  // namespace dormant::server::api
