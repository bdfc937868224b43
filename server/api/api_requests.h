// What the API's handlers share: reading a request (path, query, headers, JSON body, typed query
// parameters) and writing the common answers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/api/call.h"
#include "server/api/refusal.h"
#include "server/storage/records.h"
#include "wire/protocol.h"

namespace dormant::server::api {

http::Response error_response(boost::beast::http::status code, const std::string& message);
// invalid_input(), written (refusal.h).
http::Response invalid_request(const Error& error, std::string_view part = "body");
// The loc of a problem's "where": "target_entities[0].pod_name" → ["body", "target_entities", 0,
// "pod_name"]; nothing to say where: [part, "__root__"].
nlohmann::json problem_location(std::string_view where, std::string_view part);
http::Response json_ok(const nlohmann::json& body);
http::Response json_answer(boost::beast::http::status code, const nlohmann::json& body);
// 204, no body.
http::Response no_content();
// JSON already written (a listing's page).
http::Response json_text_ok(std::string body);
http::Response text_response(std::string content_type, std::string body);

// The request's path without its query, split at '/': "/api/x/1" → {"api", "x", "1"}. Empty
// segments stay ("/metrics/" → {"metrics", ""}), so that no other spelling reaches a route.
std::vector<std::string_view> path_segments(std::string_view target);
// Percent-decoding (RFC 3986): %XX is a byte, a bad escape stays as it is. In a path '+' stays a
// '+'; in a query it is a space, as browsers (URLSearchParams, Studio's UI) and Studio's server
// read it. A time typed with its zone unencoded (since=2026-11-22T10:00:00+02:00) is still read:
// time parameters take the space back (time_parameter).
std::string url_decode(std::string_view text, bool plus_is_space = false);
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view target);
// Whether `segments` fit `pattern` ("/api/profiles/{}": "{}" matches one segment); `params` gets
// the decoded segments "{}" matched.
bool matches(std::string_view pattern, const std::vector<std::string_view>& segments,
             std::vector<std::string>& params);
std::string_view header(const boost::beast::http::fields& fields, std::string_view name);

// The body as JSON, or the error that says why it is not.
Result<nlohmann::json> json_body(const http::Request& request, std::string_view name);
// The heartbeat in the body (wire/plain_heartbeat.h).
Result<wire::HeartbeatRequest> heartbeat_body(const http::Request& request);
// A query parameter that must be a whole number in [min, max]; absent: `fallback`.
Result<int64_t> integer_parameter(const Call& call, std::string_view name, int64_t fallback,
                                  int64_t min, int64_t max);
// An ISO-8601 time; absent: nullopt.
Result<std::optional<storage::TimePoint>> time_parameter(const Call& call, std::string_view name);
std::optional<std::string> optional_parameter(const Call& call, std::string_view name);
// The profile id of "/api/profiles/{}/…": a positive whole number, else nullopt.
std::optional<int64_t> gpid_of(const Call& call);

}  // namespace dormant::server::api
