#include "server/api/api_requests.h"

#include <algorithm>

#include "common/iso_time.h"
#include "common/text.h"
#include "server/api/wire_mapping.h"
#include "wire/json_fields.h"
#include "wire/plain_heartbeat.h"

namespace dormant::server::api {

namespace bhttp = boost::beast::http;
using bhttp::status;

http::Response error_response(status code, const std::string& message) {
  return to_response({code, message, nullptr});
}

nlohmann::json problem_location(std::string_view where, std::string_view part) {
  nlohmann::json location = nlohmann::json::array({part});
  std::string name;
  auto flush = [&] {
    if (!name.empty()) location.push_back(std::exchange(name, ""));
  };
  for (size_t i = 0; i < where.size(); ++i) {
    char c = where[i];
    if (c == '.') {
      flush();
    } else if (c == '[' && i + 1 < where.size() && where[i + 1] == '\'') {
      // A data key, single-quoted with backslash escapes: its text without them.
      flush();
      std::string key;
      for (i += 2; i < where.size() && where[i] != '\''; ++i) {
        if (where[i] == '\\' && i + 1 < where.size()) ++i;
        key += where[i];
      }
      location.push_back(std::move(key));
      if (i + 1 < where.size() && where[i + 1] == ']') ++i;
    } else if (c == '[') {
      flush();
      size_t end = where.find(']', i);
      auto index = parse_integer(where.substr(i + 1, end - i - 1));
      if (end == std::string_view::npos || !index) {
        name += c;
        continue;
      }
      location.push_back(*index);
      i = end;
    } else {
      name += c;
    }
  }
  flush();
  if (location.size() == 1) location.push_back("__root__");
  return location;
}

Refusal invalid_input(const Error& error, std::string_view part) {
  nlohmann::json detail = nlohmann::json::array();
  for (const Error::Problem& problem : error.problems()) {
    detail.push_back({{"loc", problem_location(problem.where, part)},
                      {"msg", problem.what},
                      {"type", "value_error"}});
  }
  if (detail.empty()) {
    detail.push_back(
        {{"loc", problem_location("", part)},
         {"msg", error.message()},
         {"type", error.kind() == ErrorKind::kParse ? "value_error.jsondecode" : "value_error"}});
  }
  return {status::unprocessable_entity, error.message(), std::move(detail)};
}

http::Response to_response(const Refusal& refusal) {
  nlohmann::json body = {{"success", false}, {"message", refusal.message}};
  if (!refusal.detail.is_null()) body["detail"] = refusal.detail;
  http::Response response = http::json_response(
      refusal.status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (refusal.retry_after_s > 0) {
    response.set(bhttp::field::retry_after, std::to_string(refusal.retry_after_s));
  }
  return response;
}

http::Response invalid_request(const Error& error, std::string_view part) {
  return to_response(invalid_input(error, part));
}

http::Response json_ok(const nlohmann::json& body) { return json_answer(status::ok, body); }

http::Response json_answer(boost::beast::http::status code, const nlohmann::json& body) {
  return http::json_response(code,
                             body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

http::Response no_content() {
  http::Response none(status::no_content, 11);
  none.prepare_payload();
  return none;
}

http::Response json_text_ok(std::string body) {
  return http::json_response(status::ok, std::move(body));
}

http::Response text_response(std::string content_type, std::string body) {
  http::Response response(status::ok, 11);
  response.set(bhttp::field::content_type, content_type);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

std::vector<std::string_view> path_segments(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path.starts_with('/')) path.remove_prefix(1);
  std::vector<std::string_view> segments;
  if (path.empty()) return segments;
  for (;;) {
    size_t slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) return segments;
    path.remove_prefix(slash + 1);
  }
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string url_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_query(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> query;
  size_t mark = target.find('?');
  if (mark == std::string_view::npos) return query;
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest.remove_prefix(amp == std::string_view::npos ? rest.size() : amp + 1);
    if (pair.empty()) continue;
    size_t equals = pair.find('=');
    query.emplace_back(
        url_decode(pair.substr(0, equals), /*plus_is_space=*/true),
        equals == std::string_view::npos ? "" : url_decode(pair.substr(equals + 1), true));
  }
  return query;
}

bool matches(std::string_view pattern, const std::vector<std::string_view>& segments,
             std::vector<std::string>& params) {
  std::vector<std::string_view> parts = path_segments(pattern);
  if (parts.size() != segments.size()) return false;
  params.clear();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "{}") {
      params.push_back(url_decode(segments[i]));
    } else if (parts[i] != segments[i]) {
      return false;
    }
  }
  return true;
}

std::string_view header(const boost::beast::http::fields& fields, std::string_view name) {
  auto found = fields.find(boost::beast::string_view(name.data(), name.size()));
  if (found == fields.end()) return {};
  auto value = found->value();
  return {value.data(), value.size()};
}

Result<nlohmann::json> json_body(const http::Request& request, std::string_view name) {
  if (request.body().empty()) return Error::parse(std::string(name) + ": the request has no body");
  return wire::parse_json_text(request.body(), name);
}

Result<wire::HeartbeatRequest> heartbeat_body(const http::Request& request) {
  if (request.body().empty()) return Error::parse("heartbeat: the request has no body");
  return wire::parse_heartbeat_text(request.body());
}

Result<int64_t> integer_parameter(const Call& call, std::string_view name, int64_t fallback,
                                  int64_t min, int64_t max) {
  std::string_view text = call.query_value(name);
  if (text.empty()) return fallback;
  auto value = parse_integer(text);
  if (!value || *value < min || *value > max) {
    return Error::invalid_argument(std::string(name) + ": must be a whole number from " +
                                   std::to_string(min) + " to " + std::to_string(max));
  }
  return *value;
}

Result<std::optional<storage::TimePoint>> time_parameter(const Call& call, std::string_view name) {
  std::string_view text = call.query_value(name);
  if (text.empty()) return std::optional<storage::TimePoint>();
  auto time = parse_iso_time(text);
  if (!time && text.size() > 16) {
    // A zone's '+' written unencoded arrived as a space: after the minutes, a space is one.
    std::string zone_restored(text);
    std::replace(zone_restored.begin() + 16, zone_restored.end(), ' ', '+');
    time = parse_iso_time(zone_restored);
  }
  if (!time) {
    return Error::invalid_argument(std::string(name) +
                                   ": must be an ISO-8601 time such as 2026-11-22T10:00:00Z");
  }
  return time;
}

std::optional<std::string> optional_parameter(const Call& call, std::string_view name) {
  std::string_view value = call.query_value(name);
  return value.empty() ? std::nullopt : std::optional<std::string>(value);
}

std::optional<int64_t> gpid_of(const Call& call) {
  auto gpid = parse_integer(call.params[0]);
  return gpid && *gpid > 0 ? gpid : std::nullopt;
}

}  // namespace dormant::server::api
