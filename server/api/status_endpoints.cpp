#include "server/api/status_endpoints.h"

#include "common/text.h"
#include "server/api/api_requests.h"
#include "server/api/listing_writer.h"
#include "server/api/profiling_status.h"
#include "server/api/wire_mapping.h"
#include "server/api/workload_status.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

constexpr int64_t kMaxListLimit = 10000;
// Rows a listing reads from the store at once, between which it writes them.
constexpr int64_t kListingBatch = 25;

// Where a listing of commands goes on: after the one at `position`.
std::string command_cursor(const storage::CommandPosition& position) {
  return encode_cursor(std::to_string(position.created_ms) + '.' + std::to_string(position.row));
}

}  // namespace

std::vector<Route> StatusEndpoints::routes() {
  constexpr Roles kRead = kOperatorRole | kReaderRole;
  auto read = [this](std::string_view pattern,
                     http::Response (StatusEndpoints::*method)(const Call&)) {
    return Route{verb::get,    pattern,     Auth::kBearer,        kRead,
                 Work::kStore, Body::kNone, handler(this, method)};
  };
  return {
      {verb::get, "/api/v1/health_check", Auth::kNone, kAllRoles, Work::kInline, Body::kNone,
       handler(this, &StatusEndpoints::health_check)},
      {verb::get, "/api/v2/health_check", Auth::kNone, kAllRoles, Work::kInline, Body::kNone,
       handler(this, &StatusEndpoints::health_check)},
      read("/api/metrics/profiling/host_status", &StatusEndpoints::host_status),
      read("/api/metrics/profiling/workload_status", &StatusEndpoints::workload_status),
      read("/api/hosts", &StatusEndpoints::list_hosts),
      read("/api/commands", &StatusEndpoints::list_commands),
      read("/api/commands/{}", &StatusEndpoints::get_command),
      read("/api/requests/{}", &StatusEndpoints::get_request),
      read("/api/profiles", &StatusEndpoints::list_profiles),
      read("/api/profiles/{}", &StatusEndpoints::get_profile),
      read("/api/profiles/{}/collapsed", &StatusEndpoints::download_profile),
      {verb::get, "/metrics", Auth::kBearer, kRead, Work::kInline, Body::kNone,
       handler(this, &StatusEndpoints::prometheus_metrics)},
  };
}

http::Response StatusEndpoints::host_status(const Call& call) {
  auto filters = parse_status_filters(call.query);
  if (!filters) return invalid_request(filters.error(), "query");
  storage::SnapshotQuery query;
  query.active_window = options_.active_window;
  auto snapshot = store_.workload_snapshot(query);
  if (!snapshot) return store_failure(snapshot.error());
  return json_ok(api::host_status(*snapshot, *filters));
}

http::Response StatusEndpoints::workload_status(const Call& call) {
  std::string_view scope_text = call.query_value("scope");
  auto scope = parse_status_scope(scope_text.empty() ? "host" : scope_text);
  if (!scope) return invalid_request(scope.error(), "query");
  auto filters = parse_status_filters(call.query);
  if (!filters) return invalid_request(filters.error(), "query");
  auto page = integer_parameter(call, "page", 0, 0, 1'000'000);
  auto page_size = integer_parameter(call, "page_size", 1000, 1, 10'000);
  if (!page) return invalid_request(page.error(), "query");
  if (!page_size) return invalid_request(page_size.error(), "query");
  storage::SnapshotQuery query;
  query.active_window = options_.active_window;
  if (filters->exact_match && filters->services.size() == 1) {
    query.service_name = filters->services[0];
  }
  query.all_processes = filters->on_processes();
  auto snapshot = store_.workload_snapshot(query);
  if (!snapshot) return store_failure(snapshot.error());
  WorkloadStatusView view(*scope, std::move(*filters), {*page, *page_size}, store_.now());
  std::vector<size_t> unread = view.group(*snapshot);
  if (!unread.empty()) {
    if (auto read = store_.read_processes(*snapshot, unread); !read) {
      return store_failure(read.error());
    }
  }
  return json_ok(view.render(*snapshot));
}

http::Response StatusEndpoints::health_check(const Call&) {
  return json_ok({{"message", "healthy"}});
}

http::Response StatusEndpoints::list_hosts(const Call& call) {
  // Fewer than commands by default: each host may carry 64 KiB of extra fields and as much of
  // agent_health, and its current command's arguments.
  auto limit = integer_parameter(call, "limit", 100, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  storage::HostFilter filter;
  filter.hostname = optional_parameter(call, "hostname");
  filter.service_name = optional_parameter(call, "service");
  if (auto cursor = call.query_value("after"); !cursor.empty()) {
    auto key = decode_cursor(cursor);
    size_t split = key ? key->find('\n') : std::string::npos;
    if (split == std::string::npos) {
      return error_response(status::bad_request, "after: not a cursor this server gave");
    }
    filter.after.emplace(key->substr(0, split), key->substr(split + 1));
  }
  // Read a batch at a time and written as read: a page holds one batch of rows besides its text.
  ListingWriter page("hosts");
  auto more = fill_page(
      *limit, kListingBatch,
      [&](int64_t rows) {
        filter.limit = rows;
        return store_.list_hosts(filter);
      },
      [&](storage::HostRecord& host) {
        if (!page.add(to_json(host))) return false;
        filter.after.emplace(host.last_heartbeat.service_name, host.last_heartbeat.hostname);
        host = {};  // one copy of each host at a time
        return true;
      });
  if (!more) return store_failure(more.error());
  std::optional<std::string> next;
  if (*more && filter.after)
    next = encode_cursor(filter.after->first + '\n' + filter.after->second);
  return json_text_ok(page.finish(next));
}

http::Response StatusEndpoints::list_commands(const Call& call) {
  auto limit = integer_parameter(call, "limit", 1000, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  storage::CommandFilter filter;
  filter.hostname = optional_parameter(call, "hostname");
  filter.service_name = optional_parameter(call, "service");
  filter.include_history = call.query_value("current") != "true";
  if (auto cursor = call.query_value("before"); !cursor.empty()) {
    auto key = decode_cursor(cursor);
    size_t split = key ? key->find('.') : std::string::npos;
    auto created_ms =
        split == std::string::npos ? std::nullopt : parse_integer(key->substr(0, split));
    auto row = split == std::string::npos ? std::nullopt : parse_integer(key->substr(split + 1));
    if (!created_ms || !row) {
      return error_response(status::bad_request, "before: not a cursor this server gave");
    }
    filter.before = storage::CommandPosition{*created_ms, *row};
  }
  // A request's arguments once a page, not once for each of its hosts' commands.
  filter.args_by_digest = true;
  ListingWriter page("commands", kMaxListingBytes, "additional_args");
  std::optional<Error> failed;
  auto more = fill_page(
      *limit, kListingBatch,
      [&](int64_t rows) {
        filter.limit = rows;
        return store_.list_commands(filter);
      },
      [&](const storage::Command& command) {
        const std::optional<std::string>& digest = command.args_digest;
        bool added = false;
        if (!digest || page.holds(*digest)) {
          added = page.add(to_json(command));
        } else if (auto args = store_.get_args(*digest); args) {
          added = page.add(to_json(command), *digest, *args);
        } else {
          failed = std::move(args).take_error();
        }
        if (added) filter.before = command.position;
        return added;
      });
  if (failed) return store_failure(*failed);
  if (!more) return store_failure(more.error());
  std::optional<std::string> next;
  if (*more && filter.before) next = command_cursor(*filter.before);
  return json_text_ok(page.finish(next));
}

http::Response StatusEndpoints::get_command(const Call& call) {
  auto command = store_.get_command(call.params[0]);
  if (!command) return store_failure(command.error());
  return json_ok(to_json(*command));
}

http::Response StatusEndpoints::get_request(const Call& call) {
  auto request = store_.get_request(call.params[0]);
  if (!request) return store_failure(request.error());
  return json_ok(to_json(*request));
}

http::Response StatusEndpoints::list_profiles(const Call& call) {
  auto limit = integer_parameter(call, "limit", 100, 1, kMaxListLimit);
  if (!limit) return error_response(status::bad_request, limit.error().message());
  auto since = time_parameter(call, "since");
  if (!since) return error_response(status::bad_request, since.error().message());
  auto until = time_parameter(call, "until");
  if (!until) return error_response(status::bad_request, until.error().message());
  storage::ProfileFilter filter;
  filter.service_name = optional_parameter(call, "service");
  filter.hostname = optional_parameter(call, "hostname");
  filter.since = *since;
  filter.until = *until;
  filter.limit = *limit;
  auto profiles = store_.list_profiles(filter);
  if (!profiles) return store_failure(profiles.error());
  nlohmann::json list = nlohmann::json::array();
  for (const auto& stored : *profiles) list.push_back(to_json(stored));
  return json_ok({{"profiles", list}});
}

http::Response StatusEndpoints::get_profile(const Call& call) {
  auto gpid = gpid_of(call);
  if (!gpid) return error_response(status::not_found, "no profile " + call.params[0]);
  auto stored = store_.get_profile(*gpid);
  if (!stored) return store_failure(stored.error());
  return json_ok(to_json(*stored));
}

http::Response StatusEndpoints::download_profile(const Call& call) {
  auto gpid = gpid_of(call);
  if (!gpid) return error_response(status::not_found, "no profile " + call.params[0]);
  auto text = store_.read_profile(*gpid);
  if (!text) return store_failure(text.error());
  http::Response response = text_response("text/plain; charset=utf-8", std::move(*text));
  response.set(bhttp::field::content_disposition,
               "attachment; filename=\"profile_" + std::to_string(*gpid) + ".col\"");
  return response;
}

http::Response StatusEndpoints::prometheus_metrics(const Call&) {
  return text_response("text/plain; version=0.0.4; charset=utf-8", metrics_.render());
}

}  // namespace dormant::server::api
