// The route table: which handler serves a request, on which pool, with which token and body
// limit. A request is routed once, on its headers, and the routing travels with it to whichever
// thread serves it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api/call.h"
#include "server/api/tokens.h"
#include "server/http/http_server.h"

namespace dormant::server::api {

// kBearer: "Authorization: Bearer <token>", or the token as the password of HTTP Basic (a
// browser's; browser_guard.h); kApiKey: gProfiler's GPROFILER-API-KEY header or `key` parameter.
enum class Auth { kNone, kBearer, kApiKey };
// kNone: no body; kMessage: a heartbeat or completion (kMessageBodyBytes), within the share of
// the body budget kept for them; kSmall: as large, from the shared budget (a UI's saved state);
// kBulk: the server's --max-body-bytes.
enum class Body { kNone, kMessage, kSmall, kBulk };
// Where a request is served: at once, on the thread that read it (what never waits: the health
// check, the console, /metrics), or on the pool of its kind of work.
enum class Work { kInline, kStore, kRender, kMerge };

struct Route {
  boost::beast::http::verb method;
  std::string_view pattern;  // "/api/profiles/{}/collapsed": "{}" matches one segment
  Auth auth;
  Roles allowed;  // a token with any of these roles may call it
  Work work;
  Body body;
  std::function<http::Response(const Call&)> serve;
};

// A group's member function as a route's handler.
template <typename Group>
std::function<http::Response(const Call&)> handler(Group* group,
                                                   http::Response (Group::*method)(const Call&)) {
  return [group, method](const Call& call) { return (group->*method)(call); };
}

// The route that a request's headers name, its parameters and query; or the answer that refuses
// it (no such route, another method, no token or one without the route's roles).
struct Routing {
  const Route* route = nullptr;
  std::vector<std::string> params;
  std::vector<std::pair<std::string, std::string>> query;
  std::optional<http::Response> refusal;
  std::string credential;  // Tokens::Presented
};

class Router {
 public:
  // A heartbeat or a completion: its named fields are small, and the rest is capped at 64 KiB.
  static constexpr size_t kMessageBodyBytes = 1 << 20;

  // The first route whose method and pattern fit a request serves it.
  Router(const Tokens& tokens, std::vector<Route> routes);

  Routing route(const http::RequestHeader& header) const;
  // What the HTTP layer admits of a routed request that is not refused: its body's limit, whether
  // it is a message kept in touch by the reserved budget, and the token it presented.
  static http::Admission admission(const Routing& routing);

 private:
  // The roles of the token the request presents the way `auth` says; 0: none the server knows.
  // kBearer takes the token as the password of HTTP Basic too, and sets `basic` when it is.
  Tokens::Presented presented_token(const http::RequestHeader& header,
                                    const std::vector<std::pair<std::string, std::string>>& query,
                                    Auth auth, bool* basic) const;

  const Tokens& tokens_;
  std::vector<Route> routes_;
};

}  // namespace dormant::server::api
