#include "server/api/api.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "common/text.h"
#include "server/api/api_requests.h"
#include "server/api/console.h"
#include "server/api/merge_slots.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

}  // namespace

Api::Api(storage::Store& store, Tokens tokens, ServerMetrics& metrics, ApiOptions options)
    : commands_(store),
      tokens_(std::move(tokens)),
      metrics_(metrics),
      options_(options),
      long_polls_(options_.long_poll_limits),
      agent_(store, commands_, metrics_, options_),
      requests_(store, commands_, metrics_, options_),
      status_(store, metrics_, options_),
      render_(store, metrics_, options_),
      studio_(store, metrics_, options_),
      router_(tokens_, all_routes()) {
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

std::vector<Route> Api::all_routes() {
  std::vector<Route> routes;
  for (auto group : {agent_.routes(), requests_.routes(), status_.routes(), render_.routes(),
                     studio_.routes()}) {
    routes.insert(routes.end(), group.begin(), group.end());
  }
  for (std::string_view page : {"/", "/ui/{}"}) {
    routes.push_back(
        {verb::get, page, Auth::kNone, kAllRoles, Work::kInline, Body::kNone, console_page});
  }
  return routes;
}

http::Admission Api::admit(const http::RequestHeader& header, const http::Client& client) {
  auto routing = std::make_shared<Routing>(router_.route(header));
  if (routing->refusal) finish(*routing->refusal, header, routing->route, client.remote);
  http::Admission admission = Router::admission(*routing);
  admission.note = std::shared_ptr<const Routing>(std::move(routing));
  return admission;
}

http::Response Api::handle(const http::Request& request, const http::Client& client, bool* news) {
  return answer(request, router_.route(request), client, news);
}

http::Response Api::answer(const http::Request& request, const Routing& routing,
                           const http::Client& client, bool* news, HeldHeartbeat* held) {
  Call call{request, routing.params, routing.query, client};
  call.held = held;
  http::Response response = routing.refusal ? *routing.refusal : routing.route->serve(call);
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
  // An answer opened as a document (a JSON answer, an error) runs and frames nothing; the pages
  // and drawings that do set their own policy.
  if (response.find("Content-Security-Policy") == response.end()) {
    response.set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
  }
  std::string_view endpoint = route != nullptr ? route->pattern : "other";
  metrics_.count_request(endpoint, static_cast<unsigned>(response.result_int()));
  if (response.result_int() >= 400) {
    spdlog::debug("{} {} {} from {}: {}", std::string(header.method_string()), endpoint,
                  response.result_int(), remote, response.body().substr(0, 300));
  }
}

JobPool* Api::pool_of(const Routing& routing) const {
  // Refused on its headers (no route, no token that may call it): answered at once.
  if (routing.refusal) return nullptr;
  switch (routing.route->work) {
    case Work::kInline:
      return nullptr;
    case Work::kStore:
      return store_pool_.get();
    case Work::kRender:
      return render_pool_.get();
    case Work::kMerge:
      return merge_pool_.get();
  }
  return nullptr;
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

std::chrono::milliseconds Api::long_poll_wait(const http::Request& request) const {
  if (options_.long_poll_max.count() == 0 || request.method() != verb::post) return {};
  std::string_view target(request.target().data(), request.target().size());
  if (target.substr(0, target.find('?')) != wire::kHeartbeatPath) return {};
  for (const auto& [key, value] : parse_query(target)) {
    if (key != wire::kLongPollWaitParameter) continue;
    auto seconds = parse_integer(value);
    if (!seconds || *seconds <= 0) return {};
    return std::min(std::chrono::seconds(*seconds), options_.long_poll_max);
  }
  return {};
}

void Api::handle(http::Request request, const http::Client& client,
                 std::shared_ptr<http::Responder> responder, const std::any& note) {
  // Routed when it was admitted, on its headers; a server without admit() routes it now.
  const auto* admitted = std::any_cast<std::shared_ptr<const Routing>>(&note);
  auto routing =
      admitted != nullptr ? *admitted : std::make_shared<const Routing>(router_.route(request));
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
  const wire::HeartbeatRequest& message = beat->message;
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

}  // namespace dormant::server::api
