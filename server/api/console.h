// The web console (GET / and /ui/...): one page whose script and style are inlined under the
// response's nonce. It holds no data: its script reads the JSON API with the token the person
// types, so the page itself is served without one.
#pragma once

#include "server/api/call.h"

namespace dormant::server::api {

http::Response console_page(const Call& call);

}  // namespace dormant::server::api
