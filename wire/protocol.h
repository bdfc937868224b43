// The messages between agent and server, in Performance Studio's JSON form (docs/protocol.md):
// heartbeat, heartbeat response, command completion, profile upload body.
// Each has its table of fields (message_fields.h), which its parse_* reads an untrusted body by,
// naming the offending field in its error, and its to_json writes what the other end expects by.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "wire/message_fields.h"
#include "wire/wire_enums.h"

namespace dormant::wire {

inline constexpr std::string_view kHeartbeatPath = "/api/metrics/heartbeat";

// Long-polls, Dormant's own (Performance Studio has none): a server that holds heartbeats says in
// every heartbeat answer how long it may hold one, in seconds; an agent that sees it may add
// ?wait=<seconds> to its next heartbeat, which the server then answers as soon as the host has a
// new command, or when the wait runs out.
inline constexpr std::string_view kLongPollHeader = "X-Dormant-Long-Poll";
inline constexpr std::string_view kLongPollWaitParameter = "wait";

// One process of a heartbeat's containers[] item (Studio: pid, process_name).
struct ReportedProcess {
  int pid = 0;
  std::string process_name{};

  friend bool operator==(const ReportedProcess&, const ReportedProcess&) = default;
};
const Fields<ReportedProcess>& fields_of(std::type_identity<ReportedProcess>);

// One item of a heartbeat's containers[]: a container and the processes it runs. On the wire in
// Studio's snake_case; its camelCase aliases are read too.
struct ReportedContainer {
  std::optional<std::string> container_id{};
  std::string container_name{};
  std::optional<std::string> runtime{};
  std::optional<std::string> pod_namespace{};  // "namespace" on the wire
  std::optional<std::string> pod_name{};
  std::optional<std::string> workload_name{};
  std::optional<std::string> workload_kind{};
  std::vector<ReportedProcess> processes{};

  friend bool operator==(const ReportedContainer&, const ReportedContainer&) = default;
};
const Fields<ReportedContainer>& fields_of(std::type_identity<ReportedContainer>);

nlohmann::json to_json(const std::vector<ReportedContainer>& containers);

// POST /api/metrics/heartbeat, agent → server.
struct HeartbeatRequest {
  std::string ip_address;  // v4 or v6; Studio stores it as Postgres inet
  std::string hostname;
  std::string service_name;
  std::optional<std::string> last_command_id;  // opaque: ours are UUIDs
  HostStatus status = HostStatus::kActive;
  std::optional<std::string> timestamp;  // ISO-8601 as the agent wrote it (gProfiler: local time)
  std::vector<std::string> received_command_ids;  // opaque, as last_command_id
  std::vector<std::string> executed_command_ids;
  std::vector<std::string> perf_supported_events;
  std::optional<std::string> agent_version;
  std::optional<std::string> run_mode;       // k8s, container, standalone_executable, local_python
  std::optional<std::string> pod_namespace;  // "namespace" on the wire
  std::optional<std::string> pod_name;
  // Container inventory: what runs where on the host.
  std::vector<ReportedContainer> containers;
  // The same list as JSON text, serialized once per reading by the agent: when set, the body
  // carries it in place of `containers` (an idle agent would otherwise spend most of its CPU
  // building and writing thousands of processes into every heartbeat).
  std::shared_ptr<const std::string> containers_text;
  // Ours, not Studio's: in place of containers, the digest a server answered for the list this
  // agent sent before, unchanged since. A server that holds that list keeps it; one that does not
  // answers without the digest, and the next heartbeat carries the list. Ignored when containers
  // are sent too.
  std::optional<std::string> containers_digest;
  // Ours, not Studio's: the agent's own report (idle audit, failure counters), kept as sent.
  // Not written when empty.
  nlohmann::json agent_health = nlohmann::json::object();
  // Top-level members this struct does not know, kept for the server to store.
  nlohmann::json extra = nlohmann::json::object();

  friend bool operator==(const HeartbeatRequest&, const HeartbeatRequest&) = default;
};
const Fields<HeartbeatRequest>& fields_of(std::type_identity<HeartbeatRequest>);

nlohmann::json to_json(const HeartbeatRequest& request);
// The body as sent: to_json's text (containers_digest in place of the list when set), with
// containers_text in place of containers when set. In parts, the text of `own` followed by
// `shared`: containers_text goes as it is, not copied.
struct HeartbeatBody {
  std::string own;
  std::vector<std::shared_ptr<const std::string>> shared;
};
HeartbeatBody heartbeat_body(const HeartbeatRequest& request);
std::string heartbeat_body_text(const HeartbeatRequest& request);
// Studio's model plus what its database would refuse: ip_address must parse as an address, status
// as a HostStatus; command ids are opaque strings of 1 to 255 bytes. hostname and service_name need
// 1 to 255 bytes and no control characters; each containers item a string container_name.
Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body);
// The same for a body whose containers[] was read apart (plain_heartbeat.h): `body` lacks it.
Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body,
                                                 std::vector<ReportedContainer> containers);

struct ProfilingCommand {
  // Kept as sent: the agent answers a type it does not know with a "failed" completion, which
  // needs the command's id (parse_combined_config checks the type).
  std::string command_type = "start";
  nlohmann::json combined_config = nlohmann::json::object();

  friend bool operator==(const ProfilingCommand&, const ProfilingCommand&) = default;
};
const Fields<ProfilingCommand>& fields_of(std::type_identity<ProfilingCommand>);

// The answer to a heartbeat, server → agent. The server repeats the host's current command on
// every heartbeat; the agent de-duplicates by command_id.
struct HeartbeatResponse {
  bool success = true;
  std::string message;
  std::optional<std::string> command_id;  // UUID; present whenever profiling_command is
  std::optional<ProfilingCommand> profiling_command;
  // Ours: the digest of the host's containers as the server now holds them, when they are the
  // ones this heartbeat carried (in full or by that same digest).
  std::optional<std::string> containers_digest{};

  friend bool operator==(const HeartbeatResponse&, const HeartbeatResponse&) = default;
};
const Fields<HeartbeatResponse>& fields_of(std::type_identity<HeartbeatResponse>);

nlohmann::json to_json(const HeartbeatResponse& response);
// The agent's reading: a command only when success is true and
// profiling_command is a non-empty object; command_type defaults to "start" and combined_config
// to {}. When there is no command, profiling_command is not looked at.
Result<HeartbeatResponse> parse_heartbeat_response(const nlohmann::json& body);

// POST /api/metrics/command_completion, agent → server.
struct CommandCompletion {
  std::string command_id;  // UUID
  std::string hostname;
  CompletionStatus status = CompletionStatus::kCompleted;
  // Seconds. Written as a whole number: Studio's model takes an int.
  double execution_time = 0;
  std::optional<std::string> error_message;
  std::optional<std::string> results_path;

  friend bool operator==(const CommandCompletion&, const CommandCompletion&) = default;
};
const Fields<CommandCompletion>& fields_of(std::type_identity<CommandCompletion>);

nlohmann::json to_json(const CommandCompletion& completion);
Result<CommandCompletion> parse_command_completion(const nlohmann::json& body);

// The JSON inside the gzip body of POST /api/v2/profiles, agent → server.
struct ProfileUpload {
  std::string start_time;  // ISO-8601, UTC, no fraction
  std::string end_time;
  std::string hostname;
  std::string profile;    // the collapsed text, "# {header}" line included
  double cpu_avg = 0;     // percent
  double mem_avg = 0;     // percent
  double spawn_time = 0;  // seconds since the epoch when the agent started
  // The id the server returned for the previous upload; none before the first ("" on the wire).
  std::optional<std::int64_t> gpid;

  friend bool operator==(const ProfileUpload&, const ProfileUpload&) = default;
};
const Fields<ProfileUpload>& fields_of(std::type_identity<ProfileUpload>);

nlohmann::json to_json(const ProfileUpload& upload);
Result<ProfileUpload> parse_profile_upload(const nlohmann::json& body);

}  // namespace dormant::wire
