#include "server/api/agent_endpoints.h"

#include <algorithm>
#include <istream>
#include <streambuf>
#include <variant>

#include "common/gzip.h"
#include "common/iso_time.h"
#include "heartbeat/protocol/json_fields.h"
#include "profile/collapsed.h"
#include "profile/metadata_validation.h"
#include "profile/sample_plausibility.h"
#include "server/api/api_requests.h"
#include "server/api/wire_mapping.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

constexpr std::string_view kServiceHeader = "GPROFILER-SERVICE-NAME";

// Gzip data as a stream: JSON is parsed as it is inflated, without the inflated text whole. Bad
// gzip data, or more than the limit, ends the parse at once (GzipStreamBuffer::Stop): a JSON
// error would copy the whole unfinished token into its message.
class GzipStreamBuffer final : public std::streambuf {
 public:
  struct Stop {
    http::Response refusal;
  };
  GzipStreamBuffer(std::string_view compressed, size_t limit)
      : reader_(compressed, limit), limit_(limit) {}
  size_t produced() const { return reader_.produced(); }

 private:
  int_type underflow() override {
    auto got = reader_.read(buffer_, sizeof(buffer_));
    if (!got) {
      throw Stop{error_response(status::bad_request, "profile upload: " + got.error().message())};
    }
    if (reader_.past_limit()) {
      throw Stop{error_response(
          status::payload_too_large,
          "profile upload: gzip data holds more than " + std::to_string(limit_) + " bytes")};
    }
    if (*got == 0) return traits_type::eof();
    setg(buffer_, buffer_, buffer_ + *got);
    return traits_type::to_int_type(buffer_[0]);
  }

  GzipReader reader_;
  const size_t limit_;
  char buffer_[64 << 10];
};

// The JSON that gzip data inflates to, or the answer that refuses it: 413 past `limit` bytes.
std::variant<nlohmann::json, http::Response> inflate_json(std::string_view body, size_t limit) {
  GzipStreamBuffer buffer(body, limit);
  std::istream text(&buffer);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (GzipStreamBuffer::Stop& stop) {
    return std::move(stop.refusal);
  }
  if (json.is_discarded()) {
    return error_response(status::bad_request, "profile: not valid JSON (after " +
                                                   std::to_string(buffer.produced()) +
                                                   " bytes of gzip data)");
  }
  return json;
}

// The upload's fields from its body, gzip or plain JSON; or the answer that refuses it. Gzip is
// parsed as it inflates and the profile is moved out of the tree, so that an upload holds about
// one copy of its profile besides the parser's.
std::variant<heartbeat::ProfileUpload, http::Response> read_upload_body(
    const http::Request& request, size_t max_profile_bytes) {
  const std::string& body = request.body();
  bool gzipped = body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
                 static_cast<unsigned char>(body[1]) == 0x8b;
  if (header(request, "Content-Encoding") == "gzip" && !gzipped) {
    return error_response(status::bad_request,
                          "Content-Encoding is gzip but the body is not gzip data");
  }
  nlohmann::json json;
  if (gzipped) {
    auto inflated = inflate_json(body, max_profile_bytes);
    if (auto* refusal = std::get_if<http::Response>(&inflated)) return std::move(*refusal);
    json = std::move(std::get<nlohmann::json>(inflated));
  } else {
    auto parsed = heartbeat::parse_json_text(body, "profile");
    if (!parsed) return error_response(status::bad_request, parsed.error().message());
    json = std::move(*parsed);
  }
  std::string profile;
  if (auto field = json.find("profile"); field != json.end() && field->is_string()) {
    profile = std::move(field->get_ref<std::string&>());
  }
  auto upload = heartbeat::parse_profile_upload(json);
  if (!upload) return error_response(status::unprocessable_entity, upload.error().message());
  upload->profile = std::move(profile);
  return std::move(*upload);
}

Result<storage::ProfileUpload> to_stored_upload(heartbeat::ProfileUpload&& upload,
                                                std::string_view service) {
  auto start = parse_iso_time(upload.start_time);
  auto end = parse_iso_time(upload.end_time);
  if (!start) return Error::invalid_argument("start_time: not an ISO-8601 time from 1970 to 2199");
  if (!end) return Error::invalid_argument("end_time: not an ISO-8601 time from 1970 to 2199");
  if (*end < *start) return Error::invalid_argument("end_time: before start_time");
  // The first line is "# {json}" with the metadata Studio validates (docs/protocol.md).
  if (!upload.profile.starts_with('#')) {
    return Error::invalid_argument("profile: the first line must be '# ' and the JSON header");
  }
  // Every line, now: a profile stored as it came would fail each time it is drawn or merged.
  auto parsed = profile::read_collapsed(upload.profile);
  if (!parsed) return Error::invalid_argument("profile: " + parsed.error().message());
  if (auto valid = profile::validate_profile_header(parsed->header); !valid) {
    return Error::invalid_argument("profile header: " + valid.error().message());
  }
  double duration_s = std::chrono::duration<double>(*end - *start).count();
  if (auto plausible = profile::check_plausible_samples(*parsed, duration_s); !plausible) {
    return plausible.error();
  }
  storage::ProfileUpload stored;
  stored.service_name = std::string(service);
  stored.hostname = std::move(upload.hostname);
  stored.start_time = *start;
  stored.end_time = *end;
  stored.collapsed = std::move(upload.profile);
  return stored;
}

}  // namespace

std::vector<Route> AgentEndpoints::routes() {
  return {
      {verb::post, heartbeat::kHeartbeatPath, Auth::kBearer, kAgentRole, Work::kStore,
       Body::kMessage, handler(this, &AgentEndpoints::heartbeat)},
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
    const heartbeat::HeartbeatRequest& message = held->message;
    auto answer = store_.deliver_current(message.hostname, message.service_name);
    if (!answer) return store_failure(answer.error());
    answer->containers_digest = held->containers_digest;
    return heartbeat_answer(call, message, *answer);
  }
  std::optional<Result<heartbeat::HeartbeatRequest>> parsed;
  if (held == nullptr) {
    parsed = heartbeat_body(call.request);
    if (!*parsed) return invalid_request(parsed->error());
  }
  const heartbeat::HeartbeatRequest& message = held != nullptr ? held->message : **parsed;
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
                                                const heartbeat::HeartbeatRequest& message,
                                                const storage::HeartbeatAnswer& answer) {
  if (answer.first_delivery) metrics_.add(Counter::kCommandsDelivered);
  const auto& command = answer.command;
  const auto& received = message.received_command_ids;
  call.news = answer.first_delivery ||
              (command && command->command_id != message.last_command_id &&
               std::find(received.begin(), received.end(), command->command_id) == received.end());
  http::Response response = json_ok(heartbeat::to_json(to_heartbeat_response(answer)));
  if (options_.long_poll_max.count() > 0) {
    response.set(std::string(heartbeat::kLongPollHeader),
                 std::to_string(options_.long_poll_max.count()));
  }
  return response;
}

http::Response AgentEndpoints::command_completion(const Call& call) {
  auto body = json_body(call.request, "command_completion");
  if (!body) return invalid_request(body.error());
  auto completion = heartbeat::parse_command_completion(*body);
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
  if (auto valid = heartbeat::check_name(service, "GPROFILER-SERVICE-NAME"); !valid) {
    return error_response(status::bad_request, valid.error().message());
  }
  auto upload = read_upload_body(request, options_.max_profile_bytes);
  if (auto* refused = std::get_if<http::Response>(&upload)) return std::move(*refused);
  auto& fields = std::get<heartbeat::ProfileUpload>(upload);
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

}  // namespace dormant::server::api
