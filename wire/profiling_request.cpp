#include "wire/profiling_request.h"

#include <algorithm>

#include "wire/json_fields.h"

namespace dormant::wire {
namespace {

using TargetHosts = std::map<std::string, std::optional<std::vector<int>>>;

Result<TargetHosts> read_target_hosts(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object()) {
    return field_error(path, "must be an object of host name -> list of pids, or null");
  }
  if (value.empty()) return field_error(path, "must not be empty");
  if (value.size() > kMaxListItems) {
    return field_error(path, "must have at most " + std::to_string(kMaxListItems) + " hosts");
  }
  auto read_pids = list_of(integer_in(1, kMaxPid), kMaxListItems);
  TargetHosts hosts;
  for (const auto& [hostname, pids] : value.items()) {
    std::string host_path = data_key_path(path, hostname);
    if (Result<void> checked = check_name(hostname, host_path); !checked) {
      return std::move(checked).take_error();
    }
    if (pids.is_null()) {
      hosts.emplace(hostname, std::nullopt);
      continue;
    }
    Result<std::vector<int>> host_pids = read_pids(pids, host_path);
    if (!host_pids) return std::move(host_pids).take_error();
    hosts.emplace(hostname, std::move(host_pids).value());
  }
  return hosts;
}

// A selector's text members (snake_case as kept) and the camelCase names Studio's model takes.
constexpr std::pair<std::string_view, std::string_view> kSelectorTexts[] = {
    {"id", "id"},
    {"service_name", "serviceName"},
    {"namespace", "namespace"},
    {"hostname", "hostname"},
    {"ip_address", "ipAddress"},
    {"pod_name", "podName"},
    {"container_name", "containerName"},
    {"workload_name", "workloadName"},
    {"workload_kind", "workloadKind"},
    {"process_name", "processName"}};

// A row's id as the status views give it and Studio's UI sends it back: up to five names joined
// by '|' (service|host|namespace|pod|container).
constexpr std::size_t kMaxRowIdBytes = 5 * 255 + 4;

Result<std::string> read_row_id(const nlohmann::json& value, const std::string& path) {
  Result<std::string> text = read_string(value, path);
  if (!text) return text;
  if (Result<void> checked = check_text(*text, path, kMaxRowIdBytes); !checked) {
    return std::move(checked).take_error();
  }
  return text;
}

// One target_entities item, its members in snake_case.
Result<nlohmann::json> read_entity(const nlohmann::json& entity, const std::string& path) {
  if (!entity.is_object()) return field_error(path, "must be an object");
  FieldReader fields(entity, path);
  nlohmann::json normal = nlohmann::json::object();
  for (const auto& [snake, camel] : kSelectorTexts) {
    std::string_view key = fields.find(snake) || !fields.find(camel) ? snake : camel;
    std::optional<std::string> text;
    fields.optional(key, text, snake == "id" ? read_row_id : read_name);
    if (text) normal[std::string(snake)] = std::move(*text);
  }
  std::optional<int> pid;
  fields.optional("pid", pid, integer_in(1, kMaxPid));
  if (pid) normal["pid"] = *pid;
  return fields.finish(std::move(normal));
}

Result<nlohmann::json> read_target_entities(const nlohmann::json& value, const std::string& path) {
  auto items = list_of(read_entity, kMaxSelectors)(value, path);
  if (!items) return std::move(items).take_error();
  return nlohmann::json(std::move(*items));
}

bool names_any_pid(const TargetHosts& hosts) {
  for (const auto& [hostname, pids] : hosts) {
    if (pids && !pids->empty()) return true;
  }
  return false;
}

// The selector members that name a target at `scope`; a selector needs one of them.
std::vector<std::string_view> scope_keys(TargetScope scope) {
  switch (scope) {
    case TargetScope::kHost:
      return {"id", "hostname", "ip_address"};
    case TargetScope::kService:
      return {};
    case TargetScope::kNamespace:
      return {"id", "namespace"};
    case TargetScope::kWorkload:
      return {"workload_name"};
    case TargetScope::kPod:
      return {"id", "pod_name"};
    case TargetScope::kContainer:
      return {"id", "container_name"};
    case TargetScope::kProcess:
      return {"id", "pid", "process_name"};
  }
  return {};
}

Result<void> check_selectors(const ProfilingRequest& request) {
  std::vector<std::string_view> keys = scope_keys(request.target_scope);
  for (size_t i = 0; i < request.target_entities.size(); ++i) {
    const nlohmann::json& entity = request.target_entities[i];
    if (request.request_type == CommandType::kStop && request.stop_level == StopLevel::kHost &&
        entity.contains("pid")) {
      return field_error(member_path(element_path("target_entities", i), "pid"),
                         "a stop with stop_level 'host' takes no pids");
    }
    if (keys.empty() || std::any_of(keys.begin(), keys.end(),
                                    [&](std::string_view key) { return entity.contains(key); })) {
      continue;
    }
    std::string names;
    for (std::string_view key : keys) names += (names.empty() ? "" : ", ") + std::string(key);
    return field_error(element_path("target_entities", i),
                       "selects no " + std::string(to_string(request.target_scope)) +
                           " (target_scope " + std::string(to_string(request.target_scope)) +
                           " needs one of " + names + ")");
  }
  return ok();
}

// The rules between fields. `body` is only consulted for hints about gProfiler's older names.
Result<void> check_targets(const ProfilingRequest& request, const nlohmann::json& body) {
  if (Result<void> selectors = check_selectors(request); !selectors) return selectors;
  if (request.target_hosts.empty() && request.target_entities.empty()) {
    if (body.contains("target_hostnames")) {
      return field_error("target_hosts",
                         "required (this API takes target_hosts, an object of host name -> list "
                         "of pids or null, not target_hostnames)");
    }
    return field_error("target_hosts", "required, or target_entities");
  }
  if (request.request_type != CommandType::kStop) return ok();
  if (request.stop_level == StopLevel::kHost) {
    for (const auto& [hostname, pids] : request.target_hosts) {
      if (pids && !pids->empty()) {
        return field_error(data_key_path("target_hosts", hostname),
                           "a stop with stop_level 'host' takes no pids");
      }
    }
    return ok();
  }
  if (!names_any_pid(request.target_hosts) && request.target_entities.empty()) {
    return field_error("stop_level",
                       "'process' needs at least one pid in target_hosts or an entry in "
                       "target_entities (say \"stop_level\": \"host\" to stop whole hosts)");
  }
  return ok();
}

// gProfiler's older name for it gets a hint.
void read_request_type(FieldReader& fields, std::string_view key, Presence,
                       ProfilingRequest& request) {
  if (fields.find(key) == nullptr && fields.find("command_type") != nullptr) {
    return fields.fail(
        field_error(key, "required (this API calls it request_type, not command_type)"));
  }
  fields.required(key, request.request_type, read_enum<CommandType>);
}

// Host name -> its pids or null; null when there are none.
std::optional<nlohmann::json> write_target_hosts(const ProfilingRequest& request) {
  if (request.target_hosts.empty()) return nlohmann::json(nullptr);
  return wire_value(request.target_hosts);
}

// A dry run's plan: a list of {hostname, action, pids}.
Result<nlohmann::json> read_plan(const nlohmann::json& value, const std::string& path) {
  if (!value.is_array()) return field_error(path, "must be a list");
  return value;
}

}  // namespace

const Fields<ProfilingRequest>& fields_of(std::type_identity<ProfilingRequest>) {
  using Request = ProfilingRequest;
  static const Fields<Request> kFields = {
      field("service_name", &Request::service_name, read_name).required(),
      field("request_type", &Request::request_type, read_enum<CommandType>)
          .required()
          .read_by(read_request_type),
      field("continuous", &Request::continuous, read_bool),
      field("duration", &Request::duration, integer_in(1, kMaxRequestDuration)),
      field("frequency", &Request::frequency, integer_in(1, kMaxFrequency)),
      field("profiling_mode", &Request::profiling_mode, read_enum<ProfilingMode>),
      field("target_hosts", &Request::target_hosts, read_target_hosts)
          .written_by(write_target_hosts),
      field("target_scope", &Request::target_scope, read_enum<TargetScope>),
      field("target_entities", &Request::target_entities, read_target_entities)
          .written_by([](const Request& request) -> std::optional<nlohmann::json> {
            if (request.target_entities.empty()) return nlohmann::json(nullptr);
            return request.target_entities;
          }),
      field("stop_level", &Request::stop_level, read_enum<StopLevel>),
      field("additional_args", &Request::additional_args, read_bounded_object),
      field("dry_run", &Request::dry_run, read_bool),
  };
  return kFields;
}

nlohmann::json to_json(const ProfilingRequest& request) { return write_fields(request); }

Result<ProfilingRequest> parse_profiling_request(const nlohmann::json& body) {
  if (Result<void> checked = check_body(body, "profiling request"); !checked) {
    return std::move(checked).take_error();
  }
  ProfilingRequest request;
  FieldReader fields(body, "");
  read_fields(fields, request);
  if (fields.ok()) {
    if (Result<void> checked = check_targets(request, body); !checked) {
      fields.fail(std::move(checked).take_error());
    }
  }
  return fields.finish(std::move(request));
}

nlohmann::json entities_in_camel_case(const nlohmann::json& entities) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& entity : entities) {
    nlohmann::json item = nlohmann::json::object();
    for (const auto& field : entity.items()) {
      const std::string& key = field.key();
      const auto* names = std::find_if(std::begin(kSelectorTexts), std::end(kSelectorTexts),
                                       [&](const auto& pair) { return pair.first == key; });
      item[names == std::end(kSelectorTexts) ? key : std::string(names->second)] = field.value();
    }
    out.push_back(std::move(item));
  }
  return out;
}

const Fields<ProfilingResponse>& fields_of(std::type_identity<ProfilingResponse>) {
  using Response = ProfilingResponse;
  static const Fields<Response> kFields = {
      field("success", &Response::success, read_bool).required(),
      field("message", &Response::message, read_string),
      field("request_id", &Response::request_id, read_uuid),
      field("command_ids", &Response::command_ids, list_of(read_uuid, kMaxListItems)),
      field("estimated_completion_time", &Response::estimated_completion_time, read_string),
      field("plan", &Response::plan, read_plan).omitted_when_null(),
      field("hosts_never_seen", &Response::hosts_never_seen, list_of(read_string, kMaxListItems))
          .omitted_when_null(),
  };
  return kFields;
}

nlohmann::json to_json(const ProfilingResponse& response) { return write_fields(response); }

Result<ProfilingResponse> parse_profiling_response(const nlohmann::json& body) {
  return read_body<ProfilingResponse>(body, "profiling response");
}

}  // namespace dormant::wire
