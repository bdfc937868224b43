// The control server's HTTP API: Performance Studio's endpoints for agents and for people
// (docs/protocol.md), read endpoints, a flamegraph page per stored profile, and /metrics. One
// Handler for HttpServer; every answer is JSON except the downloads, the flamegraph and /metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "heartbeat/protocol/profiling_request.h"
#include "heartbeat/protocol/protocol.h"
#include "server/api/job_pool.h"
#include "server/api/long_polls.h"
#include "server/api/merge_slots.h"
#include "server/api/refusal.h"
#include "server/api/server_metrics.h"
#include "server/api/svg_cache.h"
#include "server/api/tokens.h"
#include "server/control/commands.h"
#include "server/http/http_server.h"
#include "server/storage/store.h"

namespace dormant::server::api {

struct ApiOptions {
  // The longest a heartbeat may ask to be held (?wait=N) until its host has a new command; every
  // heartbeat answer advertises it in X-Dormant-Long-Poll. 0: no long-polls, no advertisement.
  std::chrono::seconds long_poll_max{0};
  // How many heartbeats may be held at once, and from one address (--max-connections / 2, 8):
  // past them a heartbeat is answered at once.
  LongPollLimits long_poll_limits;
  // A host heard from within it is active (Studio: 2 minutes): selectors resolve against the
  // inventories of such hosts only, and the profiling status views show only them.
  std::chrono::seconds active_window{120};
  // Mutual TLS: heartbeats, completions and uploads are taken for a host only from a client
  // certificate that names it, so that one host's key cannot speak for another.
  bool bind_hostname_to_certificate = false;
  // Largest uploaded profile once decompressed (--max-profile-mb): a gzip bomb stops here.
  size_t max_profile_bytes = 16 << 20;
  // Distinct stacks a merged flamegraph keeps: its memory, whatever the profiles hold.
  size_t merge_max_stacks = 1 << 20;
  // Profile text one merge reads at most (--merge-max-mb): past it, 413 before any is read.
  uint64_t merge_max_text_bytes = uint64_t{1} << 30;
  // Merged flamegraphs made at once (merge_slots.h): fewer than the server's threads. With
  // render_threads, on threads of their own, so that a merge (seconds, a core) never holds one
  // that draws a single profile; niced, so that heartbeats get the cores first.
  int concurrent_merges = 1;
  int merge_nice = 10;
  // Frames a flamegraph draws at most (profile/flamegraph.h); those past it become boxes.
  size_t svg_max_frames = 50000;
  // Per-profile flamegraphs kept as drawn for the next request (svg_cache.h), in bytes; 0: none.
  size_t svg_cache_bytes = 64 << 20;
  // Flamegraphs and pprof files are made on threads of their own (job_pool.h), with as many
  // more waiting; past them, 503 with Retry-After. 0: made on the thread that handles the request.
  int render_threads = 0;
  int render_queue = 0;
  // Every other request that uses the database, likewise: the threads that serve connections
  // (and the health check) never wait for it. 0: on the thread that handles the request.
  int store_threads = 0;
  int store_queue = 0;
  // A request that waited this long for a store thread is answered 503 instead (--database-wait-ms,
  // as for a connection).
  std::chrono::milliseconds store_wait{2000};
};

class Api {
 public:
  Api(storage::Store& store, Tokens tokens, ServerMetrics& metrics, ApiOptions options = {});

  // With `news`: whether a heartbeat's answer tells its agent something new (a command it has
  // not acknowledged); true for everything else.
  http::Response handle(const http::Request& request, const http::Client& client,
                        bool* news = nullptr);
  // The server's handler: as above, on the render or store pool where the request needs it; and
  // a heartbeat that asks to wait (?wait=N, long-polls on) and has nothing new is held until its
  // host gets a command or the wait runs out.
  void handle(http::Request request, const http::Client& client,
              std::shared_ptr<http::Responder> responder);

  // The server's Admit: a request for no route, or without a token its route takes, is answered
  // from its headers, before its body is read; and each route has its own body limit.
  http::Admission admit(const http::RequestHeader& header, const http::Client& client);

  // Where the store's "a command was committed for this host" goes.
  LongPolls& long_polls() { return long_polls_; }

  // A long-polled heartbeat: its message, parsed once, and what recording it answered, so that
  // its answer after the wait delivers the host's command without recording it again.
  struct HeldHeartbeat {
    heartbeat::HeartbeatRequest message;
    bool recorded = false;
    std::optional<std::string> containers_digest;  // as the recording answered it
  };

  // What a route's handler sees of a request.
  struct Call {
    const http::Request& request;
    std::vector<std::string> params;                         // the path segments matched by "{}"
    std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
    std::string_view query_value(std::string_view name) const;
    const http::Client& client;
    mutable bool news = true;  // set by the heartbeat route
    // The heartbeat route's, where a long-poll holds it.
    HeldHeartbeat* held = nullptr;
  };

 private:
  http::Response heartbeat(const Call& call);
  // A heartbeat's answer: its host's command, and whether that is news to its agent.
  http::Response heartbeat_answer(const Call& call, const heartbeat::HeartbeatRequest& message,
                                  const storage::HeartbeatAnswer& answer);
  http::Response command_completion(const Call& call);
  // profile_requests.cpp: one profiling request, or many at once (Studio's bulk).
  http::Response profile_request(const Call& call);
  http::Response bulk_profile_request(const Call& call);
  // One request's body parsed, and its selectors resolved into target_hosts; or the error
  // response that refuses it. `dry_run`: overrides the body's.
  struct PreparedRequest {
    heartbeat::ProfilingRequest request;
    std::optional<storage::TargetQuery> selected_by;  // what it was resolved from
  };
  using Prepared = std::variant<PreparedRequest, Refusal>;
  Prepared prepare_request(const nlohmann::json& body, std::optional<bool> dry_run);
  // The perf events a start asks for against those its hosts support: the error that names the
  // hosts that lack some, or nullopt. For bulk requests, as in Studio.
  Result<std::optional<Error>> check_perf_events(const heartbeat::ProfilingRequest& request);
  // A prepared request submitted: the answer, or what refuses it.
  using Submission = std::variant<heartbeat::ProfilingResponse, Refusal>;
  Submission submit_request(const PreparedRequest& prepared);
  // profiling_status.h: Studio's status views.
  http::Response host_status(const Call& call);
  // subscriptions.cpp
  http::Response list_subscriptions(const Call& call);
  http::Response workload_status(const Call& call);
  http::Response upload_profile(const Call& call);
  http::Response health_check(const Call& call);
  http::Response list_hosts(const Call& call);
  http::Response list_commands(const Call& call);
  http::Response get_command(const Call& call);
  http::Response get_request(const Call& call);
  http::Response list_profiles(const Call& call);
  http::Response get_profile(const Call& call);
  http::Response download_profile(const Call& call);
  // flamegraphs.cpp: one profile or the merge of many as an SVG flamegraph, collapsed text or
  // pprof; the differential flamegraph of two time ranges; a profile's GPU devices, each apart.
  http::Response profile_flamegraph(const Call& call);
  http::Response profile_gpus(const Call& call);
  http::Response profile_pprof(const Call& call);
  http::Response merged_flamegraph(const Call& call);
  http::Response diff_flamegraph(const Call& call);
  http::Response prometheus_metrics(const Call& call);
  // The web console: the same page for "/" and "/ui/..." (console.cpp).
  http::Response console_page(const Call& call);

  // The answer to a failed store operation: 404 for kNotFound, 422 for a request the store
  // refuses, 503 with Retry-After and the reason when the data directory is full or read-only
  // (is_storage_refusal) or the database cannot be reached (kUnavailable), 500 (counted, logged)
  // for the rest.
  Refusal store_refusal(const Error& error);
  http::Response store_failure(const Error& error) { return to_response(store_refusal(error)); }
  // A merge's: 413 past its budget of text, 503 for one stopped because its client left (counted),
  // store_failure's for the rest.
  http::Response merge_failure(const Error& error);

  enum class Auth { kNone, kBearer, kApiKey };
  // kNone: no body; kMessage: a heartbeat or completion (kMessageBodyBytes); kBulk: the server's
  // --max-body-bytes.
  enum class Body { kNone, kMessage, kBulk };
  struct Route {
    boost::beast::http::verb method;
    std::string_view pattern;  // "/api/profiles/{}/collapsed": "{}" matches one segment
    Auth auth;
    Roles allowed;  // a token with any of these roles may call it
    http::Response (Api::*serve)(const Call&);
    Body body = Body::kNone;
  };
  static const std::vector<Route>& routes();
  // The route that a request's headers name, its parameters and query; or the answer that
  // refuses it (no such route, another method, no token or one without the route's roles).
  // Found once a request, and carried to whichever thread serves it.
  struct Routing {
    const Route* route = nullptr;
    std::vector<std::string> params;
    std::vector<std::pair<std::string, std::string>> query;
    std::optional<http::Response> refusal;
    std::string credential;  // Tokens::Presented
  };
  Routing route_of(const http::RequestHeader& header) const;
  // Answers a routed request now.
  http::Response answer(const http::Request& request, const Routing& routing,
                        const http::Client& client, bool* news = nullptr,
                        HeldHeartbeat* held = nullptr);
  // What every answer gets: headers, the request's count by route, a log line for an error.
  void finish(http::Response& response, const http::RequestHeader& header, const Route* route,
              const std::string& remote);
  // With bind_hostname_to_certificate, the 403 for a request that speaks for `hostname` with a
  // certificate that does not name it.
  std::optional<http::Response> refuse_other_host(const Call& call,
                                                  std::string_view hostname) const;

  // The pool that serves a request: renders for the routes that make a flamegraph or a pprof
  // file, the store's for the others that use the database; null for those that do not, and
  // for a request refused on its headers.
  JobPool* pool_of(const Routing& routing) const;
  // Serves the request on `pool`, or answers 503 when the pool is full.
  void serve_on(JobPool& pool, http::Request request, std::shared_ptr<const Routing> routing,
                const http::Client& client, std::shared_ptr<http::Responder> responder);
  // 503 with Retry-After, saying why.
  http::Response busy_response(const http::Request& request, const Routing& routing,
                               const http::Client& client, std::string_view why);
  // Answers the request now, or holds it (a long-poll).
  void serve(const http::Request& request, std::shared_ptr<const Routing> routing,
             const http::Client& client, std::shared_ptr<http::Responder> responder);

  // The wait a heartbeat asks for, within the server's maximum; 0 for any other request.
  std::chrono::milliseconds long_poll_wait(const http::Request& request) const;

  // The roles of the token the request presents the way `auth` says; 0: none the server knows.
  Tokens::Presented presented_token(const http::RequestHeader& header,
                                    const std::vector<std::pair<std::string, std::string>>& query,
                                    Auth auth) const;

  storage::Store& store_;
  control::Commands commands_;  // requests and heartbeats, through the rules
  Tokens tokens_;
  ServerMetrics& metrics_;
  ApiOptions options_;
  LongPolls long_polls_;
  MergeSlots merge_slots_{options_.concurrent_merges};
  SvgCache svg_cache_{options_.svg_cache_bytes};
  // Last: destroyed first, they wait for the jobs running, which use the members above.
  std::unique_ptr<JobPool> render_pool_;
  std::unique_ptr<JobPool> merge_pool_;
  std::unique_ptr<JobPool> store_pool_;
};

}  // namespace dormant::server::api
