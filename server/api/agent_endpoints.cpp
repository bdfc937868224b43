#include "server/api/agent_endpoints.h"

#include <algorithm>
#include <variant>

#include "server/api/api_requests.h"
#include "server/api/upload_body.h"
#include "server/api/wire_mapping.h"
#include "wire/json_fields.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

constexpr std::string_view kServiceHeader = "GPROFILER-SERVICE-NAME";

}  // namespace

std::vector<Route> AgentEndpoints::routes() {
  return {
      {verb::post, wire::kHeartbeatPath, Auth::kBearer, kAgentRole, Work::kStore, Body::kMessage,
       handler(this, &AgentEndpoints::heartbeat)},
      {verb::post, "/api/metrics/command_completion", Auth::kBearer, kAgentRole, Work::kStore,
       Body::kMessage, handler(this, &AgentEndpoints::command_completion)},
      {verb::post, "/api/v2/profiles", Auth::kApiKey, kAgentRole, Work::kStore, Body::kBulk,
       handler(this, &AgentEndpoints::upload_profile)},
  };
}

http::Response AgentEndpoints::heartbeat(const Call& call) {
  HeldHeartbeat* held = call.held;
  if (held != nullptr && held->recorded) {
    // Its wait is over: the host's command as it is now, the heartbeat recorded already.
    const wire::HeartbeatRequest& message = held->message;
    auto answer = store_.deliver_current(message.hostname, message.service_name);
    if (!answer) return store_failure(answer.error());
    answer->containers_digest = held->containers_digest;
    return heartbeat_answer(call, message, *answer);
  }
  std::optional<Result<wire::HeartbeatRequest>> parsed;
  if (held == nullptr) {
    parsed = heartbeat_body(call.request);
    if (!*parsed) return invalid_request(parsed->error());
  }
  const wire::HeartbeatRequest& message = held != nullptr ? held->message : **parsed;
  if (auto refused = refuse_other_host(call, message.hostname)) return std::move(*refused);
  auto answer = commands_.record_heartbeat(to_host_heartbeat(message));
  if (!answer) return store_failure(answer.error());
  metrics_.add(Counter::kHeartbeats);
  if (held != nullptr) {
    held->recorded = true;
    held->containers_digest = answer->containers_digest;
  }
  return heartbeat_answer(call, message, *answer);
}

http::Response AgentEndpoints::heartbeat_answer(const Call& call,
                                                const wire::HeartbeatRequest& message,
                                                const storage::HeartbeatAnswer& answer) {
  if (answer.first_delivery) metrics_.add(Counter::kCommandsDelivered);
  const auto& command = answer.command;
  const auto& received = message.received_command_ids;
  call.news = answer.first_delivery ||
              (command && command->command_id != message.last_command_id &&
               std::find(received.begin(), received.end(), command->command_id) == received.end());
  http::Response response = json_ok(wire::to_json(to_heartbeat_response(answer)));
  if (options_.long_poll_max.count() > 0) {
    response.set(std::string(wire::kLongPollHeader),
                 std::to_string(options_.long_poll_max.count()));
  }
  return response;
}

http::Response AgentEndpoints::command_completion(const Call& call) {
  auto body = json_body(call.request, "command_completion");
  if (!body) return invalid_request(body.error());
  auto completion = wire::parse_command_completion(*body);
  if (!completion) return invalid_request(completion.error());
  if (auto refused = refuse_other_host(call, completion->hostname)) return std::move(*refused);
  auto outcome = store_.record_completion(to_completion_report(*completion));
  if (!outcome) return store_failure(outcome.error());
  metrics_.add(outcome->accepted ? Counter::kCompletions : Counter::kCompletionsRefused);
  std::string message = outcome->accepted
                            ? "Command completion recorded for " + completion->command_id
                            : outcome->message;
  return json_ok({{"success", outcome->accepted}, {"message", message}});
}

http::Response AgentEndpoints::upload_profile(const Call& call) {
  const http::Request& request = call.request;
  if (request.find(bhttp::field::content_length) == request.end()) {
    return error_response(status::length_required, "a profile upload needs a Content-Length");
  }
  std::string_view service = header(request, kServiceHeader);
  if (service.empty()) service = call.query_value("service");
  if (auto valid = wire::check_name(service, "GPROFILER-SERVICE-NAME"); !valid) {
    return error_response(status::bad_request, valid.error().message());
  }
  auto upload = read_upload_body(request, options_.max_profile_bytes);
  if (auto* refused = std::get_if<http::Response>(&upload)) return std::move(*refused);
  auto& fields = std::get<wire::ProfileUpload>(upload);
  size_t profile_bytes = fields.profile.size();
  auto stored_upload = to_stored_upload(std::move(fields), service);
  if (!stored_upload) {
    return error_response(status::unprocessable_entity, stored_upload.error().message());
  }
  if (auto refused = refuse_other_host(call, stored_upload->hostname)) return std::move(*refused);
  // Short of a full disk, uploads stop first: heartbeats, requests and completions go on.
  auto room = store_.profile_room(static_cast<int64_t>(request.body().size()));
  if (!room) return store_failure(room.error());
  if (*room) {
    // Counted by its code among the requests: the storage refusals are the 503s.
    return to_response({status::insufficient_storage, **room, nullptr, kStorageRetryAfterS});
  }
  auto gpid = store_.store_profile(*stored_upload);
  if (!gpid) return store_failure(gpid.error());
  metrics_.add(Counter::kProfilesUploaded);
  metrics_.add(Counter::kProfileBytes, profile_bytes);
  return json_ok({{"message", "ok"}, {"gpid", *gpid}});
}

std::optional<http::Response> AgentEndpoints::refuse_other_host(const Call& call,
                                                                std::string_view hostname) const {
  if (!options_.bind_hostname_to_certificate) return std::nullopt;
  const auto& names = call.client.certificate_names;
  auto same = [hostname](const std::string& name) {
    return boost::beast::iequals(name, boost::beast::string_view(hostname.data(), hostname.size()));
  };
  if (std::any_of(names.begin(), names.end(), same)) return std::nullopt;
  std::string named;
  for (const std::string& name : names) named += (named.empty() ? "" : ", ") + name;
  return error_response(status::forbidden,
                        "the client certificate names " + (named.empty() ? "no host" : named) +
                            ", not " + std::string(hostname) + " (--bind-hostname-to-certificate)");
}

}  // namespace dormant::server::api
