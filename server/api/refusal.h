// An answer that refuses a request, kept as a value until it is written: a single request answers
// with it, a bulk request reports each of its parts' in that part's result.
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/http/http_server.h"

namespace dormant::server::api {

struct Refusal {
  boost::beast::http::status status;
  std::string message;
  nlohmann::json detail;  // Studio's list of problems (422); null for other statuses
  int retry_after_s = 0;  // 0: no Retry-After
};

// 422 as Performance Studio (FastAPI) answers a request it cannot validate: "detail" lists every
// problem as {loc, msg, type}, loc starting with `part` ("body", "query"); "message" says it all
// in one line.
Refusal invalid_input(const Error& error, std::string_view part = "body");

// {"success": false, "message": …, "detail": …} with the refusal's status.
http::Response to_response(const Refusal& refusal);

}  // namespace dormant::server::api
