#include "wire/protocol.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/json_text.h"
#include "common/text.h"
#include "wire/json_fields.h"

namespace dormant::wire {
namespace {

constexpr double kMaxExecutionTime = 366.0 * 24 * 3600;  // a year of seconds
constexpr double kAnyNonNegative = std::numeric_limits<double>::max();

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

// An integer id, "" for none: how the agent writes the previous upload's id.
std::optional<nlohmann::json> write_gpid(const ProfileUpload& upload) {
  return upload.gpid ? nlohmann::json(*upload.gpid) : nlohmann::json("");
}

// Whole seconds, within a year: Studio's model takes an int.
std::optional<nlohmann::json> write_execution_time(const CommandCompletion& completion) {
  double seconds = std::isfinite(completion.execution_time)
                       ? std::clamp(completion.execution_time, 0.0, kMaxExecutionTime)
                       : 0.0;
  return static_cast<std::int64_t>(std::llround(seconds));
}

// The list, unless the heartbeat names it by the digest of the one sent before.
std::optional<nlohmann::json> write_containers(const HeartbeatRequest& request) {
  if (request.containers_digest) return std::nullopt;
  return wire_value(request.containers);
}

// Only when the body has no containers member (null included): a list sent wins.
void read_containers_digest(FieldReader& fields, std::string_view key, Presence,
                            HeartbeatRequest& request) {
  if (!fields.has("containers")) fields.optional(key, request.containers_digest, read_name);
}

// Read only when the answer carries a command: success is true and profiling_command a non-empty
// object (gProfiler tests the dict's truthiness, so {} is no command either).
void read_profiling_command(FieldReader& fields, std::string_view key, Presence,
                            HeartbeatResponse& response) {
  if (!fields.ok() || !response.success) return;
  const nlohmann::json* command = fields.object(key);
  if (command == nullptr || command->empty()) return;
  Result<ProfilingCommand> parsed = read_message<ProfilingCommand>(*command, std::string(key));
  if (!parsed) return fields.fail(std::move(parsed).take_error());
  if (!response.command_id) {
    return fields.fail(field_error("command_id", "required with a profiling_command"));
  }
  response.profiling_command = std::move(parsed).value();
}

}  // namespace

const Fields<ReportedProcess>& fields_of(std::type_identity<ReportedProcess>) {
  static const Fields<ReportedProcess> kFields = {
      integer<&ReportedProcess::pid, 1, kMaxPid>("pid").required(),
      text<&ReportedProcess::process_name>("process_name").required().spelled_also("processName"),
  };
  return kFields;
}

const Fields<ReportedContainer>& fields_of(std::type_identity<ReportedContainer>) {
  static const Fields<ReportedContainer> kFields = {
      text<&ReportedContainer::container_name>("container_name")
          .required()
          .spelled_also("containerName"),
      text<&ReportedContainer::container_id>("container_id")
          .spelled_also("containerId")
          .omitted_when_null(),
      text<&ReportedContainer::runtime>("runtime").omitted_when_null(),
      text<&ReportedContainer::pod_namespace>("namespace").omitted_when_null(),
      text<&ReportedContainer::pod_name>("pod_name").spelled_also("podName").omitted_when_null(),
      text<&ReportedContainer::workload_name>("workload_name")
          .spelled_also("workloadName")
          .omitted_when_null(),
      text<&ReportedContainer::workload_kind>("workload_kind")
          .spelled_also("workloadKind")
          .omitted_when_null(),
      list_of_messages("processes", &ReportedContainer::processes, kMaxListItems),
  };
  return kFields;
}

const Fields<HeartbeatRequest>& fields_of(std::type_identity<HeartbeatRequest>) {
  using Request = HeartbeatRequest;
  static const Fields<Request> kFields = {
      field("ip_address", &Request::ip_address, read_ip_address).required(),
      field("hostname", &Request::hostname, read_name).required(),
      field("service_name", &Request::service_name, read_name).required(),
      field("last_command_id", &Request::last_command_id, read_command_id),
      field("status", &Request::status, read_enum<HostStatus>),
      field("timestamp", &Request::timestamp, read_string),
      field("received_command_ids", &Request::received_command_ids,
            list_of(read_command_id, kMaxListItems)),
      field("executed_command_ids", &Request::executed_command_ids,
            list_of(read_command_id, kMaxListItems)),
      field("perf_supported_events", &Request::perf_supported_events,
            list_of(read_string, kMaxListItems)),
      field("agent_version", &Request::agent_version, read_string),
      field("run_mode", &Request::run_mode, read_string),
      field("namespace", &Request::pod_namespace, read_string),
      field("pod_name", &Request::pod_name, read_string),
      list_of_messages("containers", &Request::containers, kMaxListItems)
          .written_by(write_containers),
      field("containers_digest", &Request::containers_digest, read_name)
          .read_by(read_containers_digest)
          .omitted_when_null(),
      field("agent_health", &Request::agent_health, read_bounded_object)
          .written_by([](const Request& request) -> std::optional<nlohmann::json> {
            if (request.agent_health.empty()) return std::nullopt;
            return request.agent_health;
          }),
  };
  return kFields;
}

const Fields<ProfilingCommand>& fields_of(std::type_identity<ProfilingCommand>) {
  static const Fields<ProfilingCommand> kFields = {
      field("command_type", &ProfilingCommand::command_type, read_string),
      field("combined_config", &ProfilingCommand::combined_config, read_object),
  };
  return kFields;
}

const Fields<HeartbeatResponse>& fields_of(std::type_identity<HeartbeatResponse>) {
  using Response = HeartbeatResponse;
  static const Fields<Response> kFields = {
      field("success", &Response::success, read_bool).required(),
      field("message", &Response::message, read_string),
      field("command_id", &Response::command_id, read_uuid),
      field("containers_digest", &Response::containers_digest, read_name).omitted_when_null(),
      field("profiling_command", &Response::profiling_command, read_message<ProfilingCommand>)
          .read_by(read_profiling_command),
  };
  return kFields;
}

const Fields<CommandCompletion>& fields_of(std::type_identity<CommandCompletion>) {
  using Completion = CommandCompletion;
  static const Fields<Completion> kFields = {
      field("command_id", &Completion::command_id, read_command_id).required(),
      field("hostname", &Completion::hostname, read_name).required(),
      field("status", &Completion::status, read_enum<CompletionStatus>).required(),
      field("execution_time", &Completion::execution_time, number_in(0, kMaxExecutionTime))
          .written_by(write_execution_time),
      field("error_message", &Completion::error_message, read_string),
      field("results_path", &Completion::results_path, read_string),
  };
  return kFields;
}

const Fields<ProfileUpload>& fields_of(std::type_identity<ProfileUpload>) {
  static const Fields<ProfileUpload> kFields = {
      field("start_time", &ProfileUpload::start_time, read_string).required(),
      field("end_time", &ProfileUpload::end_time, read_string).required(),
      field("hostname", &ProfileUpload::hostname, read_name).required(),
      field("profile", &ProfileUpload::profile, read_string).required(),
      field("cpu_avg", &ProfileUpload::cpu_avg, number_in(0, kAnyNonNegative)),
      field("mem_avg", &ProfileUpload::mem_avg, number_in(0, kAnyNonNegative)),
      field("spawn_time", &ProfileUpload::spawn_time, read_epoch_seconds),
      field("gpid", &ProfileUpload::gpid, read_gpid).written_by(write_gpid),
  };
  return kFields;
}

nlohmann::json to_json(const std::vector<ReportedContainer>& containers) {
  return wire_value(containers);
}

nlohmann::json to_json(const HeartbeatRequest& request) {
  nlohmann::json body = request.extra.is_object() ? request.extra : nlohmann::json::object();
  write_fields(request, body);
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
  read_fields(fields, request);
  if (read_apart) {
    request.containers = std::move(*read_apart);
    request.containers_digest.reset();  // a list was sent
  }
  request.extra = members_not_named<HeartbeatRequest>(fields);
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

nlohmann::json to_json(const HeartbeatResponse& response) { return write_fields(response); }

Result<HeartbeatResponse> parse_heartbeat_response(const nlohmann::json& body) {
  return read_body<HeartbeatResponse>(body, "heartbeat response");
}

nlohmann::json to_json(const CommandCompletion& completion) { return write_fields(completion); }

Result<CommandCompletion> parse_command_completion(const nlohmann::json& body) {
  return read_body<CommandCompletion>(body, "command completion");
}

nlohmann::json to_json(const ProfileUpload& upload) { return write_fields(upload); }

Result<ProfileUpload> parse_profile_upload(const nlohmann::json& body) {
  return read_body<ProfileUpload>(body, "profile upload");
}

}  // namespace dormant::wire
