// POST /api/metrics/profile_request (docs/protocol.md): a person's or a script's request to start
// or stop profiling on some hosts, and the server's answer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "wire/limits.h"
#include "wire/message_fields.h"
#include "wire/wire_enums.h"

namespace dormant::wire {

struct ProfilingRequest {
  std::string service_name;
  CommandType request_type = CommandType::kStart;  // required on the wire
  bool continuous = false;
  int duration = 60;   // seconds
  int frequency = 11;  // Hz
  ProfilingMode profiling_mode = ProfilingMode::kCpu;
  // Host name → the pids to profile there; nullopt: the whole host. Empty: none given (the wire
  // form {} is refused).
  std::map<std::string, std::optional<std::vector<int>>> target_hosts;
  TargetScope target_scope = TargetScope::kHost;
  // Selectors resolved by the server against the heartbeat inventory: a list of objects, kept as
  // sent. Empty: none given.
  nlohmann::json target_entities = nlohmann::json::array();
  StopLevel stop_level = StopLevel::kProcess;
  // Merged flat into the command's combined_config (profiler_configs, max_processes, ...).
  std::optional<nlohmann::json> additional_args;
  bool dry_run = false;  // validate only

  friend bool operator==(const ProfilingRequest&, const ProfilingRequest&) = default;
};
const Fields<ProfilingRequest>& fields_of(std::type_identity<ProfilingRequest>);

nlohmann::json to_json(const ProfilingRequest& request);
// Studio's rules: at least one of target_hosts and target_entities; a stop at process level
// names at least one pid or entity; a stop at host level names no pids. Plus heartbeat/limits.h
// (duration, frequency, pids, list lengths) and host names of 1 to 255 bytes.
Result<ProfilingRequest> parse_profiling_request(const nlohmann::json& body);

// target_entities as parse_profiling_request leaves them (snake_case members) written as Studio
// writes them (camelCase).
nlohmann::json entities_in_camel_case(const nlohmann::json& entities);

struct ProfilingResponse {
  bool success = true;
  std::string message;
  std::optional<std::string> request_id;                 // UUID; none for a dry run
  std::vector<std::string> command_ids;                  // one per target host
  std::optional<std::string> estimated_completion_time;  // ISO-8601; starts only
  // Ours, for a dry run: each host the request reaches, as {hostname, action, pids} (pids null:
  // the whole host). Not written when null.
  nlohmann::json plan{};
  // Ours: the target hosts that never sent a heartbeat under the service (their commands wait
  // for one). Not written when none.
  std::optional<std::vector<std::string>> hosts_never_seen{};

  friend bool operator==(const ProfilingResponse&, const ProfilingResponse&) = default;
};
const Fields<ProfilingResponse>& fields_of(std::type_identity<ProfilingResponse>);

nlohmann::json to_json(const ProfilingResponse& response);
// What a client reads of the answer; plan, when there, must be a list.
Result<ProfilingResponse> parse_profiling_response(const nlohmann::json& body);

}  // namespace dormant::wire
