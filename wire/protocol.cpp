#include "wire/protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/json_text.h"
#include "common/text.h"
#include "wire/container_texts.h"
#include "wire/json_fields.h"

namespace dormant::wire {
namespace {

constexpr double kMaxExecutionTime = 366.0 * 24 * 3600;  // a year of seconds
constexpr double kAnyNonNegative = std::numeric_limits<double>::max();

// The member `name`, or its camelCase `alias` when only that is there.
std::string_view spelling(const FieldReader& fields, std::string_view name,
                          std::string_view alias) {
  return fields.find(name) || !fields.find(alias) ? name : alias;
}

Result<ReportedProcess> read_process(const nlohmann::json& process, const std::string& path) {
  if (!process.is_object()) return field_error(path, "must be an object");
  FieldReader fields(process, path);
  ReportedProcess read;
  fields.required("pid", read.pid, integer_in(1, kMaxPid));
  fields.required(spelling(fields, "process_name", "processName"), read.process_name, read_string);
  return fields.finish(std::move(read));
}

Result<ReportedContainer> read_container(const nlohmann::json& container, const std::string& path) {
  if (!container.is_object()) return field_error(path, "must be an object");
  FieldReader fields(container, path);
  ReportedContainer read;
  fields.required(spelling(fields, "container_name", "containerName"), read.container_name,
                  read_string);
  for (const ContainerText& text : kContainerTexts) {
    fields.optional(spelling(fields, text.name, text.alias), read.*text.member, read_string);
  }
  fields.optional("processes", read.processes, list_of(read_process, kMaxListItems));
  return fields.finish(std::move(read));
}

// An integer id, its digits as text (Studio takes either), or "" for none.
Result<std::optional<std::int64_t>> read_gpid(const nlohmann::json& value,
                                              const std::string& path) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text.empty()) return std::optional<std::int64_t>();
    std::optional<std::int64_t> digits = parse_integer(text);
    if (digits && *digits >= 0) return digits;
    return field_error(path, "must be a non-negative integer or \"\"");
  }
  Result<std::int64_t> gpid =
      read_integer(value, path, 0, std::numeric_limits<std::int64_t>::max());
  if (!gpid) return field_error(path, "must be a non-negative integer or \"\"");
  return std::optional<std::int64_t>(*gpid);
}

}  // namespace

nlohmann::json to_json(const std::vector<ReportedContainer>& containers) {
  nlohmann::json items = nlohmann::json::array();
  for (const ReportedContainer& container : containers) {
    nlohmann::json processes = nlohmann::json::array();
    for (const ReportedProcess& process : container.processes) {
      processes.push_back({{"pid", process.pid}, {"process_name", process.process_name}});
    }
    nlohmann::json item = {{"container_name", container.container_name},
                           {"processes", std::move(processes)}};
    for (const ContainerText& text : kContainerTexts) {
      if (const auto& value = container.*text.member) item[std::string(text.name)] = *value;
    }
    items.push_back(std::move(item));
  }
  return items;
}

nlohmann::json to_json(const HeartbeatRequest& request) {
  nlohmann::json body = request.extra.is_object() ? request.extra : nlohmann::json::object();
  body["ip_address"] = request.ip_address;
  body["hostname"] = request.hostname;
  body["service_name"] = request.service_name;
  body["last_command_id"] = or_null(request.last_command_id);
  body["status"] = to_string(request.status);
  body["timestamp"] = or_null(request.timestamp);
  body["received_command_ids"] = request.received_command_ids;
  body["executed_command_ids"] = request.executed_command_ids;
  body["perf_supported_events"] = request.perf_supported_events;
  body["agent_version"] = or_null(request.agent_version);
  body["run_mode"] = or_null(request.run_mode);
  body["namespace"] = or_null(request.pod_namespace);
  body["pod_name"] = or_null(request.pod_name);
  if (request.containers_digest) {
    body["containers_digest"] = *request.containers_digest;
  } else {
    body["containers"] = to_json(request.containers);
  }
  if (!request.agent_health.empty()) body["agent_health"] = request.agent_health;
  return body;
}

HeartbeatBody heartbeat_body(const HeartbeatRequest& request) {
  static const auto kClosing = std::make_shared<const std::string>("}");
  nlohmann::json body = to_json(request);
  if (!request.containers_text || request.containers_digest) return {json_text(body), {}};
  body.erase("containers");
  std::string own = json_text(body);  // an object, never empty: "{...}"
  own.pop_back();
  own += ",\"containers\":";
  return {std::move(own), {request.containers_text, kClosing}};
}

std::string heartbeat_body_text(const HeartbeatRequest& request) {
  HeartbeatBody body = heartbeat_body(request);
  for (const auto& part : body.shared) body.own += *part;
  return std::move(body.own);
}

namespace {

// `read_apart`: the containers, when the body's list was read apart from it.
Result<HeartbeatRequest> read_heartbeat(const nlohmann::json& body,
                                        std::optional<std::vector<ReportedContainer>> read_apart) {
  if (Result<void> checked = check_body(body, "heartbeat"); !checked) {
    return std::move(checked).take_error();
  }
  HeartbeatRequest request;
  FieldReader fields(body, "");
  fields.required("ip_address", request.ip_address, read_ip_address);
  fields.required("hostname", request.hostname, read_name);
  fields.required("service_name", request.service_name, read_name);
  fields.optional("last_command_id", request.last_command_id, read_command_id);
  fields.optional("status", request.status, read_enum<HostStatus>);
  fields.optional("timestamp", request.timestamp, read_string);
  fields.optional("received_command_ids", request.received_command_ids,
                  list_of(read_command_id, kMaxListItems));
  fields.optional("executed_command_ids", request.executed_command_ids,
                  list_of(read_command_id, kMaxListItems));
  fields.optional("perf_supported_events", request.perf_supported_events,
                  list_of(read_string, kMaxListItems));
  fields.optional("agent_version", request.agent_version, read_string);
  fields.optional("run_mode", request.run_mode, read_string);
  fields.optional("namespace", request.pod_namespace, read_string);
  fields.optional("pod_name", request.pod_name, read_string);
  if (read_apart) {
    request.containers = std::move(*read_apart);
  } else {
    fields.optional("containers", request.containers, list_of(read_container, kMaxListItems));
  }
  if (!read_apart && !body.contains("containers")) {
    fields.optional("containers_digest", request.containers_digest, read_name);
  }
  fields.optional("agent_health", request.agent_health, read_bounded_object);
  request.extra = fields.members_except(
      {"ip_address", "hostname", "service_name", "last_command_id", "status", "timestamp",
       "received_command_ids", "executed_command_ids", "perf_supported_events", "agent_version",
       "run_mode", "namespace", "pod_name", "containers", "containers_digest", "agent_health"});
  if (auto fits = check_unnamed_fields_size(request.extra); !fits) {
    fields.fail(std::move(fits).take_error());
  }
  return fields.finish(std::move(request));
}

}  // namespace

Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body) {
  return read_heartbeat(body, std::nullopt);
}

Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body,
                                                 std::vector<ReportedContainer> containers) {
  return read_heartbeat(body, std::move(containers));
}

nlohmann::json to_json(const HeartbeatResponse& response) {
  nlohmann::json command = nullptr;
  if (response.profiling_command) {
    command = {{"command_type", response.profiling_command->command_type},
               {"combined_config", response.profiling_command->combined_config}};
  }
  nlohmann::json body = {{"success", response.success},
                         {"message", response.message},
                         {"command_id", or_null(response.command_id)},
                         {"profiling_command", std::move(command)}};
  if (response.containers_digest) body["containers_digest"] = *response.containers_digest;
  return body;
}

Result<HeartbeatResponse> parse_heartbeat_response(const nlohmann::json& body) {
  if (Result<void> checked = check_body(body, "heartbeat response"); !checked) {
    return std::move(checked).take_error();
  }
  HeartbeatResponse response;
  FieldReader fields(body, "");
  fields.required("success", response.success, read_bool);
  fields.optional("message", response.message, read_string);
  fields.optional("command_id", response.command_id, read_uuid);
  fields.optional("containers_digest", response.containers_digest, read_name);
  if (!fields.ok() || !response.success) return fields.finish(std::move(response));

  const nlohmann::json* command = fields.object("profiling_command");
  // gProfiler tests the dict's truthiness, so {} is no command either.
  if (command == nullptr || command->empty()) return fields.finish(std::move(response));
  FieldReader command_fields(*command, "profiling_command");
  ProfilingCommand parsed;
  command_fields.optional("command_type", parsed.command_type, read_string);
  command_fields.optional("combined_config", parsed.combined_config, read_object);
  if (!command_fields.ok()) return command_fields.status().take_error();
  if (!response.command_id) return field_error("command_id", "required with a profiling_command");
  response.profiling_command = std::move(parsed);
  return response;
}

nlohmann::json to_json(const CommandCompletion& completion) {
  double seconds = std::isfinite(completion.execution_time)
                       ? std::clamp(completion.execution_time, 0.0, kMaxExecutionTime)
                       : 0.0;
  return {{"command_id", completion.command_id},
          {"hostname", completion.hostname},
          {"status", to_string(completion.status)},
          {"execution_time", static_cast<std::int64_t>(std::llround(seconds))},
          {"error_message", or_null(completion.error_message)},
          {"results_path", or_null(completion.results_path)}};
}

Result<CommandCompletion> parse_command_completion(const nlohmann::json& body) {
  if (Result<void> checked = check_body(body, "command completion"); !checked) {
    return std::move(checked).take_error();
  }
  CommandCompletion completion;
  FieldReader fields(body, "");
  fields.required("command_id", completion.command_id, read_command_id);
  fields.required("hostname", completion.hostname, read_name);
  fields.required("status", completion.status, read_enum<CompletionStatus>);
  fields.optional("execution_time", completion.execution_time, number_in(0, kMaxExecutionTime));
  fields.optional("error_message", completion.error_message, read_string);
  fields.optional("results_path", completion.results_path, read_string);
  return fields.finish(std::move(completion));
}

nlohmann::json to_json(const ProfileUpload& upload) {
  return {{"start_time", upload.start_time},
          {"end_time", upload.end_time},
          {"hostname", upload.hostname},
          {"profile", upload.profile},
          {"cpu_avg", upload.cpu_avg},
          {"mem_avg", upload.mem_avg},
          {"spawn_time", upload.spawn_time},
          {"gpid", upload.gpid ? nlohmann::json(*upload.gpid) : nlohmann::json("")}};
}

Result<ProfileUpload> parse_profile_upload(const nlohmann::json& body) {
  if (Result<void> checked = check_body(body, "profile upload"); !checked) {
    return std::move(checked).take_error();
  }
  ProfileUpload upload;
  FieldReader fields(body, "");
  fields.required("start_time", upload.start_time, read_string);
  fields.required("end_time", upload.end_time, read_string);
  fields.required("hostname", upload.hostname, read_name);
  fields.required("profile", upload.profile, read_string);
  fields.optional("cpu_avg", upload.cpu_avg, number_in(0, kAnyNonNegative));
  fields.optional("mem_avg", upload.mem_avg, number_in(0, kAnyNonNegative));
  fields.optional("spawn_time", upload.spawn_time, read_epoch_seconds);
  fields.optional("gpid", upload.gpid, read_gpid);
  return fields.finish(std::move(upload));
}

}  // namespace dormant::wire
