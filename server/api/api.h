// The control server's HTTP API: Performance Studio's endpoints for agents and for people
// (reference §1-§3), read endpoints, a flamegraph page per stored profile, and /metrics. One
// Handler for HttpServer; every answer is JSON except the downloads, the flamegraph and /metrics.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/server_metrics.h"
#include "server/api/tokens.h"
#include "server/http/http_server.h"
#include "server/storage/store.h"

namespace dormant::server::api {

struct ApiOptions {
  // Largest uploaded profile once decompressed: a gzip bomb stops here. Collapsed text packs
  // about 10:1, so 4 MiB of gzip (the body limit) holds some 40 MiB of profile.
  size_t max_profile_bytes = 64 << 20;
};

class Api {
 public:
  Api(storage::Store& store, Tokens tokens, ServerMetrics& metrics, ApiOptions options = {});

  http::Response handle(const http::Request& request, const std::string& remote);

  // What a route's handler sees of a request.
  struct Call {
    const http::Request& request;
    std::vector<std::string> params;                         // the path segments matched by "{}"
    std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
    std::string_view query_value(std::string_view name) const;
  };

 private:
  http::Response heartbeat(const Call& call);
  http::Response command_completion(const Call& call);
  http::Response profile_request(const Call& call);
  http::Response upload_profile(const Call& call);
  http::Response health_check(const Call& call);
  http::Response list_hosts(const Call& call);
  http::Response list_commands(const Call& call);
  http::Response get_command(const Call& call);
  http::Response get_request(const Call& call);
  http::Response list_profiles(const Call& call);
  http::Response get_profile(const Call& call);
  http::Response download_profile(const Call& call);
  http::Response profile_flamegraph(const Call& call);
  http::Response prometheus_metrics(const Call& call);

  // The answer to a failed store operation: 404 for kNotFound, 422 for a request the store
  // refuses, 503 with Retry-After and the reason when the data directory is full or read-only
  // (is_storage_refusal), 500 (counted, logged) for the rest.
  http::Response store_failure(const Error& error);

  enum class Auth { kNone, kBearer, kApiKey };
  struct Route {
    boost::beast::http::verb method;
    std::string_view pattern;  // "/api/profiles/{}/collapsed": "{}" matches one segment
    Auth auth;
    Roles allowed;  // a token with any of these roles may call it
    http::Response (Api::*serve)(const Call&);
  };
  static const std::vector<Route>& routes();
  // The roles of the token the request presents the way `auth` says; 0: none the server knows.
  Roles presented_roles(const http::Request& request, const Call& call, Auth auth) const;

  storage::Store& store_;
  Tokens tokens_;
  ServerMetrics& metrics_;
  ApiOptions options_;
};

}  // namespace dormant::server::api
