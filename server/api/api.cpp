#include "server/api/api.h"

#include <algorithm>
#include <istream>
#include <limits>
#include <streambuf>
#include <variant>

#include <spdlog/spdlog.h>

#include "common/gzip.h"
#include "common/iso_time.h"
#include "common/text.h"
#include "heartbeat/protocol/json_fields.h"
#include "profile/collapsed.h"
#include "profile/flamegraph.h"
#include "profile/metadata_validation.h"
#include "profile/sample_plausibility.h"
#include "server/api/api_requests.h"
#include "server/api/content_policy.h"
#include "server/api/listing_writer.h"
#include "server/api/profiling_status.h"
#include "server/api/wire_mapping.h"
#include "server/api/workload_status.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

constexpr std::string_view kServiceHeader = "GPROFILER-SERVICE-NAME";
constexpr std::string_view kApiKeyHeader = "GPROFILER-API-KEY";
constexpr int64_t kMaxListLimit = 10000;
// Rows a listing reads from the store at once, between which it writes them.
constexpr int64_t kListingBatch = 25;
// A heartbeat or a completion: its named fields are small, and the rest is capped at 64 KiB.
constexpr size_t kMessageBodyBytes = 1 << 20;
// When a client refused for a full or read-only data directory should try again. Agents keep
// what they could not send (a spooled profile, a completion) and retry on any 5xx.
constexpr int kStorageRetryAfterS = 30;

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

// Where a listing of commands goes on: after the one at `position`.
std::string command_cursor(const storage::CommandPosition& position) {
  return encode_cursor(std::to_string(position.created_ms) + '.' + std::to_string(position.row));
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

std::string_view Api::Call::query_value(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return value;
  }
  return {};
}

Api::Api(storage::Store& store, Tokens tokens, ServerMetrics& metrics, ApiOptions options)
    : store_(store),
      commands_(store),
      tokens_(std::move(tokens)),
      metrics_(metrics),
      options_(options),
      long_polls_(options.long_poll_limits) {
  if (options_.render_threads > 0) {
    render_pool_ =
        std::make_unique<JobPool>("render", options_.render_threads, options_.render_queue);
    // One merge may wait for each thread: a client asking for merges one after another finds
    // the last one's thread still returning, a moment after it answered.
    merge_pool_ = std::make_unique<JobPool>("merge", options_.concurrent_merges,
                                            options_.concurrent_merges, options_.merge_nice);
  }
  if (options_.store_threads > 0) {
    store_pool_ = std::make_unique<JobPool>("store", options_.store_threads, options_.store_queue);
  }
}

const std::vector<Api::Route>& Api::routes() {
  constexpr Roles kAgent = kAgentRole;
  constexpr Roles kOperator = kOperatorRole;
  constexpr Roles kRead = kOperatorRole | kReaderRole;
  static const std::vector<Route> kRoutes = {
      {verb::post, heartbeat::kHeartbeatPath, Auth::kBearer, kAgent, &Api::heartbeat,
       Body::kMessage},
      {verb::post, "/api/metrics/command_completion", Auth::kBearer, kAgent,
       &Api::command_completion, Body::kMessage},
      {verb::post, "/api/metrics/profile_request", Auth::kBearer, kOperator, &Api::profile_request,
       Body::kBulk},
      {verb::post, "/api/metrics/profile_request/bulk", Auth::kBearer, kOperator,
       &Api::bulk_profile_request, Body::kBulk},
      {verb::post, "/api/v2/profiles", Auth::kApiKey, kAgent, &Api::upload_profile, Body::kBulk},
      {verb::get, "/api/v1/health_check", Auth::kNone, kAllRoles, &Api::health_check},
      {verb::get, "/api/v2/health_check", Auth::kNone, kAllRoles, &Api::health_check},
      {verb::get, "/api/metrics/profiling/host_status", Auth::kBearer, kRead, &Api::host_status},
      {verb::get, "/api/metrics/profiling/workload_status", Auth::kBearer, kRead,
       &Api::workload_status},
      {verb::get, "/api/subscriptions", Auth::kBearer, kRead, &Api::list_subscriptions},
      {verb::get, "/api/hosts", Auth::kBearer, kRead, &Api::list_hosts},
      {verb::get, "/api/commands", Auth::kBearer, kRead, &Api::list_commands},
      {verb::get, "/api/commands/{}", Auth::kBearer, kRead, &Api::get_command},
      {verb::get, "/api/requests/{}", Auth::kBearer, kRead, &Api::get_request},
      {verb::get, "/api/profiles", Auth::kBearer, kRead, &Api::list_profiles},
      {verb::get, "/api/profiles/{}", Auth::kBearer, kRead, &Api::get_profile},
      {verb::get, "/api/profiles/{}/collapsed", Auth::kBearer, kRead, &Api::download_profile},
      {verb::get, "/api/profiles/{}/flamegraph", Auth::kBearer, kRead, &Api::profile_flamegraph},
      {verb::get, "/api/profiles/{}/pprof", Auth::kBearer, kRead, &Api::profile_pprof},
      {verb::get, "/api/profiles/{}/gpus", Auth::kBearer, kRead, &Api::profile_gpus},
      {verb::get, "/api/flamegraph", Auth::kBearer, kRead, &Api::merged_flamegraph},
      {verb::get, "/api/flamegraph/diff", Auth::kBearer, kRead, &Api::diff_flamegraph},
      {verb::get, "/metrics", Auth::kBearer, kRead, &Api::prometheus_metrics},
      {verb::get, "/", Auth::kNone, kAllRoles, &Api::console_page},
      {verb::get, "/ui/{}", Auth::kNone, kAllRoles, &Api::console_page},
  };
  return kRoutes;
}

Api::Routing Api::route_of(const http::RequestHeader& header) const {
  std::string_view target(header.target().data(), header.target().size());
  std::vector<std::string_view> segments = path_segments(target);
  Routing routing;
  routing.query = parse_query(target);
  std::string allowed;
  for (const Route& candidate : routes()) {
    if (!matches(candidate.pattern, segments, routing.params)) continue;
    if (candidate.method == header.method()) {
      routing.route = &candidate;
      break;
    }
    allowed += (allowed.empty() ? "" : ", ") + std::string(bhttp::to_string(candidate.method));
  }
  const Route* route = routing.route;
  Tokens::Presented presented;
  if (route != nullptr) presented = presented_token(header, routing.query, route->auth);
  Roles roles = presented.roles;
  routing.credential = std::move(presented.credential);
  if (route == nullptr && !allowed.empty()) {
    routing.refusal =
        error_response(status::method_not_allowed, "this endpoint takes " + allowed + ", not " +
                                                       std::string(header.method_string()));
    routing.refusal->set(bhttp::field::allow, allowed);
  } else if (route == nullptr) {
    routing.refusal = error_response(status::not_found, "no such endpoint");
  } else if (roles == 0) {
    routing.refusal =
        error_response(status::unauthorized,
                       route->auth == Auth::kApiKey
                           ? "a valid API token is required in the GPROFILER-API-KEY header"
                           : "a valid API token is required: 'Authorization: Bearer <token>'");
    routing.refusal->set(bhttp::field::www_authenticate, "Bearer");
  } else if ((roles & route->allowed) == 0) {
    routing.refusal =
        error_response(status::forbidden, "this token's roles (" + role_names(roles) +
                                              ") do not allow this endpoint: it needs " +
                                              role_names(route->allowed));
  }
  return routing;
}

http::Admission Api::admit(const http::RequestHeader& header, const http::Client& client) {
  Routing routing = route_of(header);
  http::Admission admission;
  if (routing.refusal) {
    finish(*routing.refusal, header, routing.route, client.remote);
    admission.refusal = std::move(routing.refusal);
    return admission;
  }
  admission.authenticated = routing.route->auth != Auth::kNone;
  admission.credential = std::move(routing.credential);
  switch (routing.route->body) {
    case Body::kNone:
      admission.max_body_bytes = 0;
      break;
    case Body::kMessage:
      admission.max_body_bytes = kMessageBodyBytes;
      admission.reserved = true;  // what keeps the fleet's agents in touch
      break;
    case Body::kBulk:
      admission.max_body_bytes = std::numeric_limits<size_t>::max();  // the server's own limit
      break;
  }
  return admission;
}

http::Response Api::handle(const http::Request& request, const http::Client& client, bool* news) {
  return answer(request, route_of(request), client, news);
}

http::Response Api::answer(const http::Request& request, const Routing& routing,
                           const http::Client& client, bool* news, HeldHeartbeat* held) {
  Call call{request, routing.params, routing.query, client};
  call.held = held;
  http::Response response =
      routing.refusal ? *routing.refusal : (this->*routing.route->serve)(call);
  if (news != nullptr) *news = call.news;
  finish(response, request, routing.route, client.remote);
  return response;
}

void Api::finish(http::Response& response, const http::RequestHeader& header, const Route* route,
                 const std::string& remote) {
  // Nothing the API answers is to be guessed at or kept by a cache on the way.
  response.set("X-Content-Type-Options", "nosniff");
  if (response.find(bhttp::field::cache_control) == response.end()) {
    response.set(bhttp::field::cache_control, "no-store");
  }
  std::string_view endpoint = route != nullptr ? route->pattern : "other";
  metrics_.count_request(endpoint, static_cast<unsigned>(response.result_int()));
  if (response.result_int() >= 400) {
    spdlog::debug("{} {} {} from {}: {}", std::string(header.method_string()), endpoint,
                  response.result_int(), remote, response.body().substr(0, 300));
  }
}

JobPool* Api::pool_of(const Routing& routing) const {
  static const std::vector<http::Response (Api::*)(const Call&)> kRenders = {
      &Api::profile_flamegraph, &Api::profile_pprof, &Api::profile_gpus};
  static const std::vector<http::Response (Api::*)(const Call&)> kMerges = {&Api::merged_flamegraph,
                                                                            &Api::diff_flamegraph};
  static const std::vector<http::Response (Api::*)(const Call&)> kWithoutStore = {
      &Api::health_check, &Api::console_page, &Api::prometheus_metrics};
  // Refused on its headers (no route, no token that may call it): answered at once.
  if (routing.refusal) return nullptr;
  auto serve = routing.route->serve;
  if (std::find(kRenders.begin(), kRenders.end(), serve) != kRenders.end()) {
    return render_pool_.get();
  }
  if (std::find(kMerges.begin(), kMerges.end(), serve) != kMerges.end()) {
    return merge_pool_.get();
  }
  if (std::find(kWithoutStore.begin(), kWithoutStore.end(), serve) != kWithoutStore.end()) {
    return nullptr;
  }
  return store_pool_.get();
}

void Api::serve_on(JobPool& pool, http::Request request, std::shared_ptr<const Routing> routing,
                   const http::Client& client, std::shared_ptr<http::Responder> responder) {
  auto held = std::make_shared<const http::Request>(std::move(request));
  const bool waits_for_store = &pool == store_pool_.get();
  auto queued_at = std::chrono::steady_clock::now();
  bool posted = pool.try_post([this, held, routing, client, responder, waits_for_store, queued_at] {
    try {
      if (waits_for_store && std::chrono::steady_clock::now() - queued_at > options_.store_wait) {
        return responder->reply(
            busy_response(*held, *routing, client,
                          "requests that use the database are waiting longer than they may"));
      }
      serve(*held, routing, client, responder);
    } catch (const std::exception& error) {
      // The path only: a query string may carry a token.
      std::string_view target(held->target().data(), held->target().size());
      spdlog::error("{} {}: internal error: {}", std::string(held->method_string()),
                    target.substr(0, target.find('?')), error.what());
      responder->reply(error_response(status::internal_server_error, "internal server error"));
    }
  });
  if (posted) return;
  responder->reply(
      busy_response(*held, *routing, client,
                    waits_for_store ? "as many requests as the server serves at once are waiting"
                    : &pool == merge_pool_.get()
                        ? kMergesBusy
                        : "as many flamegraphs as the server draws at once are being drawn"));
}

http::Response Api::busy_response(const http::Request& request, const Routing& routing,
                                  const http::Client& client, std::string_view why) {
  http::Response busy =
      error_response(status::service_unavailable, std::string(why) + "; try again shortly");
  busy.set(bhttp::field::retry_after, "5");
  finish(busy, request, routing.route, client.remote);
  return busy;
}

std::optional<http::Response> Api::refuse_other_host(const Call& call,
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

std::chrono::milliseconds Api::long_poll_wait(const http::Request& request) const {
  if (options_.long_poll_max.count() == 0 || request.method() != verb::post) return {};
  std::string_view target(request.target().data(), request.target().size());
  if (target.substr(0, target.find('?')) != heartbeat::kHeartbeatPath) return {};
  for (const auto& [key, value] : parse_query(target)) {
    if (key != heartbeat::kLongPollWaitParameter) continue;
    auto seconds = parse_integer(value);
    if (!seconds || *seconds <= 0) return {};
    return std::min(std::chrono::seconds(*seconds), options_.long_poll_max);
  }
  return {};
}

void Api::handle(http::Request request, const http::Client& client,
                 std::shared_ptr<http::Responder> responder) {
  auto routing = std::make_shared<const Routing>(route_of(request));
  if (JobPool* pool = pool_of(*routing)) {
    return serve_on(*pool, std::move(request), std::move(routing), client, std::move(responder));
  }
  serve(request, std::move(routing), client, std::move(responder));
}

void Api::serve(const http::Request& request, std::shared_ptr<const Routing> routing,
                const http::Client& client, std::shared_ptr<http::Responder> responder) {
  std::chrono::milliseconds wait = long_poll_wait(request);
  // A held heartbeat keeps a copy of its request: only ordinary ones are held.
  constexpr size_t kLargestHeldBody = 64 << 10;
  if (wait.count() == 0 || request.body().size() > kLargestHeldBody) {
    return responder->reply(answer(request, *routing, client));
  }
  auto parsed = heartbeat_body(request);
  if (!parsed) return responder->reply(answer(request, *routing, client));
  auto beat =
      std::make_shared<HeldHeartbeat>(HeldHeartbeat{std::move(*parsed), false, std::nullopt});
  const heartbeat::HeartbeatRequest& message = beat->message;
  // Watched before the store is read: a command committed after that read wakes it.
  auto poll =
      long_polls_.watch(LongPolls::key_of(message.hostname, message.service_name), client.address);
  if (!poll) return responder->reply(answer(request, *routing, client, nullptr, beat.get()));
  bool news = true;
  http::Response response = answer(request, *routing, client, &news, beat.get());
  if (news || response.result() != status::ok) {
    poll->cancel();
    return responder->reply(std::move(response));
  }
  // The request goes with the connection's buffers: the held heartbeat keeps a copy.
  auto held = std::make_shared<const http::Request>(request);
  poll->arm(responder->executor(), wait,
            [this, held, routing, beat, client, responder](bool woken) {
              metrics_.add(woken ? Counter::kLongPollsWoken : Counter::kLongPollsExpired);
              auto answer_now = [this, held, routing, beat, client, responder] {
                responder->reply(answer(*held, *routing, client, nullptr, beat.get()));
              };
              // Held heartbeats are bounded (LongPollLimits): their answers queue whatever the
              // count.
              if (store_pool_ != nullptr) return store_pool_->post(std::move(answer_now));
              answer_now();
            });
  responder->on_reclaim([poll] { poll->end_now(); });
}

Tokens::Presented Api::presented_token(
    const http::RequestHeader& request,
    const std::vector<std::pair<std::string, std::string>>& query, Auth auth) const {
  switch (auth) {
    case Auth::kNone:
      return {kAllRoles, ""};
    case Auth::kBearer: {
      std::string_view value = header(request, "Authorization");
      constexpr std::string_view kScheme = "Bearer ";  // case-insensitive (RFC 7235)
      if (value.size() <= kScheme.size() ||
          !boost::beast::iequals(boost::beast::string_view(value.data(), kScheme.size()),
                                 boost::beast::string_view(kScheme.data(), kScheme.size()))) {
        return {};
      }
      return tokens_.check(value.substr(kScheme.size()));
    }
    case Auth::kApiKey: {
      // gProfiler sends the token both as a header and as the `key` query parameter.
      std::string_view key = header(request, kApiKeyHeader);
      for (const auto& [name, value] : query) {
        if (key.empty() && name == "key") key = value;
      }
      return tokens_.check(key);
    }
  }
  return {};
}

Refusal Api::store_refusal(const Error& error) {
  if (error.kind() == ErrorKind::kNotFound) return {status::not_found, error.message(), nullptr};
  if (error.kind() == ErrorKind::kInvalidArgument) {
    return {status::unprocessable_entity, error.message(), nullptr};
  }
  if (storage::is_storage_refusal(error) || error.kind() == ErrorKind::kUnavailable ||
      error.kind() == ErrorKind::kTimeout) {
    // The store logged it when the refusals began; each refused request is only counted. A
    // database that cannot be reached, or is too slow (a lock held, every connection busy), is
    // waited out the same way.
    metrics_.add(Counter::kStorageRefusals);
    return {status::service_unavailable, error.message(), nullptr, kStorageRetryAfterS};
  }
  metrics_.add(Counter::kStorageErrors);
  spdlog::error("storage: {}", error.message());  // paths and SQLite's words stay in the log
  return {status::internal_server_error,
          "the server could not read or write its data; its log says why", nullptr};
}

http::Response Api::heartbeat(const Call& call) {
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

http::Response Api::heartbeat_answer(const Call& call, const heartbeat::HeartbeatRequest& message,
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

http::Response Api::command_completion(const Call& call) {
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

http::Response Api::host_status(const Call& call) {
  auto filters = parse_status_filters(call.query);
  if (!filters) return invalid_request(filters.error(), "query");
  storage::SnapshotQuery query;
  query.active_window = options_.active_window;
  auto snapshot = store_.workload_snapshot(query);
  if (!snapshot) return store_failure(snapshot.error());
  return json_ok(api::host_status(*snapshot, *filters));
}

http::Response Api::workload_status(const Call& call) {
  std::string_view scope_text = call.query_value("scope");
  auto scope = parse_status_scope(scope_text.empty() ? "host" : scope_text);
  if (!scope) return invalid_request(scope.error(), "query");
  auto filters = parse_status_filters(call.query);
  if (!filters) return invalid_request(filters.error(), "query");
  auto page = integer_parameter(call, "page", 0, 0, 1'000'000);
  auto page_size = integer_parameter(call, "page_size", 1000, 1, 10'000);
  if (!page) return invalid_request(page.error(), "query");
  if (!page_size) return invalid_request(page_size.error(), "query");
  storage::SnapshotQuery query;
  query.active_window = options_.active_window;
  if (filters->exact_match && filters->services.size() == 1) {
    query.service_name = filters->services[0];
  }
  query.all_processes = filters->on_processes();
  auto snapshot = store_.workload_snapshot(query);
  if (!snapshot) return store_failure(snapshot.error());
  WorkloadStatusView view(*scope, std::move(*filters), {*page, *page_size}, store_.now());
  std::vector<size_t> unread = view.group(*snapshot);
  if (!unread.empty()) {
    if (auto read = store_.read_processes(*snapshot, unread); !read) {
      return store_failure(read.error());
    }
  }
  return json_ok(view.render(*snapshot));
}

http::Response Api::upload_profile(const Call& call) {
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

http::Response Api::health_check(const Call&) { return json_ok({{"message", "healthy"}}); }

http::Response Api::list_hosts(const Call& call) {
  // Fewer than commands by default: each host may carry 64 KiB of extra fields and as much of
  // agent_health, and its current command's arguments.
  auto limit = integer_parameter(call, "limit", 100, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  storage::HostFilter filter;
  filter.hostname = optional_parameter(call, "hostname");
  filter.service_name = optional_parameter(call, "service");
  if (auto cursor = call.query_value("after"); !cursor.empty()) {
    auto key = decode_cursor(cursor);
    size_t split = key ? key->find('\n') : std::string::npos;
    if (split == std::string::npos) {
      return error_response(status::bad_request, "after: not a cursor this server gave");
    }
    filter.after.emplace(key->substr(0, split), key->substr(split + 1));
  }
  // Read a batch at a time and written as read: a page holds one batch of rows besides its text.
  ListingWriter page("hosts");
  auto more = fill_page(
      *limit, kListingBatch,
      [&](int64_t rows) {
        filter.limit = rows;
        return store_.list_hosts(filter);
      },
      [&](storage::HostRecord& host) {
        if (!page.add(to_json(host))) return false;
        filter.after.emplace(host.last_heartbeat.service_name, host.last_heartbeat.hostname);
        host = {};  // one copy of each host at a time
        return true;
      });
  if (!more) return store_failure(more.error());
  std::optional<std::string> next;
  if (*more && filter.after)
    next = encode_cursor(filter.after->first + '\n' + filter.after->second);
  return json_text_ok(page.finish(next));
}

http::Response Api::list_commands(const Call& call) {
  auto limit = integer_parameter(call, "limit", 1000, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  storage::CommandFilter filter;
  filter.hostname = optional_parameter(call, "hostname");
  filter.service_name = optional_parameter(call, "service");
  filter.include_history = call.query_value("current") != "true";
  if (auto cursor = call.query_value("before"); !cursor.empty()) {
    auto key = decode_cursor(cursor);
    size_t split = key ? key->find('.') : std::string::npos;
    auto created_ms =
        split == std::string::npos ? std::nullopt : parse_integer(key->substr(0, split));
    auto row = split == std::string::npos ? std::nullopt : parse_integer(key->substr(split + 1));
    if (!created_ms || !row) {
      return error_response(status::bad_request, "before: not a cursor this server gave");
    }
    filter.before = storage::CommandPosition{*created_ms, *row};
  }
  // A request's arguments once a page, not once for each of its hosts' commands.
  filter.args_by_digest = true;
  ListingWriter page("commands", kMaxListingBytes, "additional_args");
  std::optional<Error> failed;
  auto more = fill_page(
      *limit, kListingBatch,
      [&](int64_t rows) {
        filter.limit = rows;
        return store_.list_commands(filter);
      },
      [&](const storage::Command& command) {
        const std::optional<std::string>& digest = command.args_digest;
        bool added = false;
        if (!digest || page.holds(*digest)) {
          added = page.add(to_json(command));
        } else if (auto args = store_.get_args(*digest); args) {
          added = page.add(to_json(command), *digest, *args);
        } else {
          failed = std::move(args).take_error();
        }
        if (added) filter.before = command.position;
        return added;
      });
  if (failed) return store_failure(*failed);
  if (!more) return store_failure(more.error());
  std::optional<std::string> next;
  if (*more && filter.before) next = command_cursor(*filter.before);
  return json_text_ok(page.finish(next));
}

http::Response Api::get_command(const Call& call) {
  auto command = store_.get_command(call.params[0]);
  if (!command) return store_failure(command.error());
  return json_ok(to_json(*command));
}

http::Response Api::get_request(const Call& call) {
  auto request = store_.get_request(call.params[0]);
  if (!request) return store_failure(request.error());
  return json_ok(to_json(*request));
}

http::Response Api::list_profiles(const Call& call) {
  auto limit = integer_parameter(call, "limit", 100, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  auto since = time_parameter(call, "since");
  if (!since) return error_response(status::bad_request, since.error().message());
  auto until = time_parameter(call, "until");
  if (!until) return error_response(status::bad_request, until.error().message());
  storage::ProfileFilter filter;
  filter.service_name = optional_parameter(call, "service");
  filter.hostname = optional_parameter(call, "hostname");
  filter.since = *since;
  filter.until = *until;
  filter.limit = *limit;
  auto profiles = store_.list_profiles(filter);
  if (!profiles) return store_failure(profiles.error());
  nlohmann::json list = nlohmann::json::array();
  for (const auto& stored : *profiles) list.push_back(to_json(stored));
  return json_ok({{"profiles", list}});
}

http::Response Api::get_profile(const Call& call) {
  auto gpid = gpid_of(call);
  if (!gpid) return error_response(status::not_found, "no profile " + call.params[0]);
  auto stored = store_.get_profile(*gpid);
  if (!stored) return store_failure(stored.error());
  return json_ok(to_json(*stored));
}

http::Response Api::download_profile(const Call& call) {
  auto gpid = gpid_of(call);
  if (!gpid) return error_response(status::not_found, "no profile " + call.params[0]);
  auto text = store_.read_profile(*gpid);
  if (!text) return store_failure(text.error());
  http::Response response = text_response("text/plain; charset=utf-8", std::move(*text));
  response.set(bhttp::field::content_disposition,
               "attachment; filename=\"profile_" + std::to_string(*gpid) + ".col\"");
  return response;
}

http::Response Api::prometheus_metrics(const Call&) {
  return text_response("text/plain; version=0.0.4; charset=utf-8", metrics_.render());
}

}  // namespace dormant::server::api
