// The control server's HTTP API: Performance Studio's endpoints for agents and for people
// (docs/protocol.md), read endpoints, a flamegraph page per stored profile, and /metrics. One
// Handler for HttpServer: it routes a request once (router.h), serves it on the pool its work
// takes, holds long-polled heartbeats, and answers through the endpoint groups (agent, requests,
// status, rendering), each in its own file with its own dependencies.
#pragma once

#include <any>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/agent_endpoints.h"
#include "server/api/api_options.h"
#include "server/api/call.h"
#include "server/api/job_pool.h"
#include "server/api/long_polls.h"
#include "server/api/render_endpoints.h"
#include "server/api/request_endpoints.h"
#include "server/api/router.h"
#include "server/api/server_metrics.h"
#include "server/api/status_endpoints.h"
#include "server/api/studio_endpoints.h"
#include "server/api/tokens.h"
#include "server/control/commands.h"
#include "server/http/http_server.h"
#include "server/storage/store.h"

namespace dormant::server::api {

class Api {
 public:
  Api(storage::Store& store, Tokens tokens, ServerMetrics& metrics, ApiOptions options = {});
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // With `news`: whether a heartbeat's answer tells its agent something new (a command it has
  // not acknowledged); true for everything else.
  http::Response handle(const http::Request& request, const http::Client& client,
                        bool* news = nullptr);
  // The server's handler: as above, on the render, merge or store pool where the request's route
  // says; and a heartbeat that asks to wait (?wait=N, long-polls on) and has nothing new is held
  // until its host gets a command or the wait runs out.
  void handle(http::Request request, const http::Client& client,
              std::shared_ptr<http::Responder> responder, const std::any& note = {});

  // The server's Admit: a request for no route, or without a token its route takes, is answered
  // from its headers, before its body is read; and each route has its own body limit. The
  // admission's note is the request's routing, for handle().
  http::Admission admit(const http::RequestHeader& header, const http::Client& client);

  // Where the store's "a command was committed for this host" goes.
  LongPolls& long_polls() { return long_polls_; }

 private:
  // Every group's routes, and the console's.
  std::vector<Route> all_routes();
  // Answers a routed request now.
  http::Response answer(const http::Request& request, const Routing& routing,
                        const http::Client& client, bool* news = nullptr,
                        HeldHeartbeat* held = nullptr);
  // What every answer gets: headers, the request's count by route, a log line for an error.
  void finish(http::Response& response, const http::RequestHeader& header, const Route* route,
              const std::string& remote);

  // The pool of the route's work; null for work done at once, and for a request refused on its
  // headers.
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

  control::Commands commands_;  // requests and heartbeats, through the rules
  Tokens tokens_;
  ServerMetrics& metrics_;
  const ApiOptions options_;
  LongPolls long_polls_;
  AgentEndpoints agent_;
  RequestEndpoints requests_;
  StatusEndpoints status_;
  RenderEndpoints render_;
  StudioEndpoints studio_;
  Router router_;
  // Last: destroyed first, they wait for the jobs running, which use the members above.
  std::unique_ptr<JobPool> render_pool_;
  std::unique_ptr<JobPool> merge_pool_;
  std::unique_ptr<JobPool> store_pool_;
};

}  // namespace dormant::server::api
