#include "server/api/router.h"

#include <limits>

#include "server/api/api_requests.h"
#include "server/api/browser_guard.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;

constexpr std::string_view kApiKeyHeader = "GPROFILER-API-KEY";

}  // namespace

Router::Router(const Tokens& tokens, std::vector<Route> routes)
    : tokens_(tokens), routes_(std::move(routes)) {}

Routing Router::route(const http::RequestHeader& header) const {
  std::string_view target(header.target().data(), header.target().size());
  std::vector<std::string_view> segments = path_segments(target);
  Routing routing;
  routing.query = parse_query(target);
  std::string allowed;
  for (const Route& candidate : routes_) {
    if (!matches(candidate.pattern, segments, routing.params)) continue;
    if (candidate.method == header.method()) {
      routing.route = &candidate;
      break;
    }
    allowed += (allowed.empty() ? "" : ", ") + std::string(bhttp::to_string(candidate.method));
  }
  const Route* route = routing.route;
  Tokens::Presented presented;
  bool basic = false;
  if (route != nullptr) presented = presented_token(header, routing.query, route->auth, &basic);
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
    routing.refusal = error_response(
        status::unauthorized,
        route->auth == Auth::kApiKey
            ? "a valid API token is required in the GPROFILER-API-KEY header"
            : "a valid API token is required: 'Authorization: Bearer <token>', or as the "
              "password of HTTP Basic");
    routing.refusal->set(bhttp::field::www_authenticate, kBearerChallenge);
    // Basic only to a request that tried no Bearer token: a page that sends one itself (our
    // console) gets no browser login dialog for a wrong one.
    if (route->auth == Auth::kBearer && !bearer_token(api::header(header, "Authorization"))) {
      routing.refusal->insert(bhttp::field::www_authenticate, kBasicChallenge);
    }
  } else if (auto refusal = cross_site_refusal(header, basic)) {
    routing.refusal = error_response(status::forbidden, *refusal);
  } else if ((roles & route->allowed) == 0) {
    routing.refusal =
        error_response(status::forbidden, "this token's roles (" + role_names(roles) +
                                              ") do not allow this endpoint: it needs " +
                                              role_names(route->allowed));
  }
  return routing;
}

http::Admission Router::admission(const Routing& routing) {
  http::Admission admission;
  if (routing.refusal) {
    admission.refusal = routing.refusal;
    return admission;
  }
  admission.authenticated = routing.route->auth != Auth::kNone;
  admission.credential = routing.credential;
  switch (routing.route->body) {
    case Body::kNone:
      admission.max_body_bytes = 0;
      break;
    case Body::kMessage:
      admission.max_body_bytes = kMessageBodyBytes;
      admission.reserved = true;  // what keeps the fleet's agents in touch
      break;
    case Body::kSmall:
      admission.max_body_bytes = kMessageBodyBytes;
      break;
    case Body::kBulk:
      admission.max_body_bytes = std::numeric_limits<size_t>::max();  // the server's own limit
      break;
  }
  return admission;
}

Tokens::Presented Router::presented_token(
    const http::RequestHeader& request,
    const std::vector<std::pair<std::string, std::string>>& query, Auth auth, bool* basic) const {
  switch (auth) {
    case Auth::kNone:
      return {kAllRoles, ""};
    case Auth::kBearer: {
      std::string_view value = header(request, "Authorization");
      if (auto password = basic_password(value)) {
        *basic = true;
        return tokens_.check(*password);
      }
      auto token = bearer_token(value);
      if (!token) return {};
      return tokens_.check(*token);
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

}  // namespace dormant::server::api
