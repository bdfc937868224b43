// What a browser sends on its own: HTTP Basic credentials (the way Performance Studio's web UI is
// put behind a password: the browser asks once, then adds them to every request to the origin),
// and with them, requests that another site's page makes it send. The password of Basic is one
// of the server's tokens; a state-changing request is refused when it comes from another site.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http/http_server.h"

namespace dormant::server::api {

// The challenge of a 401: Bearer for agents and scripts, Basic for a browser to ask for one.
inline constexpr char kBearerChallenge[] = "Bearer realm=\"dormant\"";
inline constexpr char kBasicChallenge[] = "Basic realm=\"dormant\", charset=\"UTF-8\"";

// The token of an "Authorization: Bearer <token>" value (the scheme in any case); none for any
// other scheme.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// The password of an "Authorization: Basic <base64 of user:password>" value; none for any other
// scheme or a value that does not decode. The user name is not checked.
std::optional<std::string> basic_password(std::string_view authorization);

// Why a request that changes state is refused as another site's (a page elsewhere posting with
// the browser's credentials): its Sec-Fetch-Site is cross-site or same-site, or its Origin is
// neither the Host it was sent to nor a proxy's X-Forwarded-Host. From a browser (Basic
// credentials, an Origin or a Sec-Fetch-Site), a POST or PUT must also be application/json, which
// no cross-site form can send without a preflight. None: it may go on.
std::optional<std::string> cross_site_refusal(const http::RequestHeader& request, bool basic);

}  // namespace dormant::server::api
