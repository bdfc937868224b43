// What a browser may do with a document the server renders (the console's pages, flamegraph
// SVGs): load nothing from elsewhere, run and apply only the inline script and style marked with
// the response's nonce, and never guess another content type.
#pragma once

#include <string>

#include "server/http/http_server.h"

namespace dormant::server::api {

// 128 random bits, base64: a new one for every response.
std::string new_nonce();

// Sets Content-Security-Policy (default-src 'none'; script and style by `nonce` only; requests
// and frames to this origin) and X-Content-Type-Options: nosniff.
void restrict_document(http::Response& response, const std::string& nonce);

}  // namespace dormant::server::api
