#include "server/api/studio_endpoints.h"

#include <algorithm>
#include <map>
#include <string>
#include <variant>

#include "common/iso_time.h"
#include "common/text.h"
#include "server/api/api_requests.h"
#include "server/api/studio_metrics.h"
#include "server/api/studio_queries.h"
#include "server/api/studio_services.h"
#include "wire/json_fields.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;
using nlohmann::json;
using storage::Label;

// What a snapshot may hold: the UI marks a few frames; a bound for any other client.
constexpr size_t kMaxSnapshotFrames = 1000;
// A service's name as kept with a saved filter or a snapshot.
constexpr size_t kMaxServiceBytes = 1024;

// The common three and the filter of a data call, or the answer that refuses them.
struct ViewQuery {
  StudioRange range;
  std::optional<storage::LabelFilter> filter;
  int64_t from_ms() const { return storage::to_unix_ms(range.start); }
  int64_t to_ms() const { return storage::to_unix_ms(range.end); }
};

std::variant<ViewQuery, http::Response> view_query(const Call& call) {
  auto range = studio_range(call);
  if (!range) return invalid_request(range.error(), "query");
  auto filter = studio_filter_parameter(call);
  if (!filter) return error_response(status::bad_request, filter.error().message());
  return ViewQuery{std::move(*range), std::move(*filter)};
}

// Runs `answer` on the call's view query, or answers its refusal.
template <typename Answer>
http::Response with_view(const Call& call, Answer answer) {
  auto query = view_query(call);
  if (auto* refusal = std::get_if<http::Response>(&query)) return std::move(*refusal);
  return answer(std::get<ViewQuery>(query));
}

storage::UploadMetricsQuery uploads_in(const ViewQuery& view, int64_t slot_ms) {
  return {view.range.service, view.from_ms(), view.to_ms(), slot_ms};
}

// A slot wider than any range: its uploads as one.
constexpr int64_t kOneSlot = int64_t{1} << 62;

Result<int64_t> slot_of(const Call& call, const ViewQuery& view, bool plural) {
  return series_slot_ms(call.query_value("requested_interval"), plural,
                        view.to_ms() - view.from_ms());
}

// A UI's JSON body, an object nested within the bounds every message keeps to.
Result<json> ui_body(const Call& call, std::string_view name) {
  auto body = json_body(call.request, name);
  if (!body) return body;
  if (auto checked = wire::check_body(*body, name); !checked) {
    return std::move(checked).take_error();
  }
  return body;
}

Result<void> check_service_name(std::string_view service, std::string_view where) {
  if (service.empty()) {
    return Error::problem(ErrorKind::kInvalidArgument, std::string(where), "field required");
  }
  if (service.size() > kMaxServiceBytes) {
    return Error::problem(ErrorKind::kInvalidArgument, std::string(where),
                          "at most " + std::to_string(kMaxServiceBytes) + " bytes");
  }
  return ok();
}

http::Response created(const json& body) { return json_answer(status::created, body); }

http::Response not_found(const std::string& why) { return error_response(status::not_found, why); }

// A saved filter's or a snapshot's id in the path: a positive whole number.
std::optional<int64_t> id_in_path(const Call& call) {
  auto id = parse_integer(call.params[0]);
  if (!id || *id <= 0) return std::nullopt;
  return id;
}

// The id in a body: a whole number, or one written as text (the UI sends "" for a new filter).
std::optional<int64_t> id_in_body(const json& body) {
  auto id = body.find("id");
  if (id == body.end()) return std::nullopt;
  if (id->is_number_integer()) return id->get<int64_t>();
  if (id->is_string()) return parse_integer(id->get_ref<const std::string&>());
  return std::nullopt;
}

// A filter body's rules, written back as the UI writes them; kInvalidArgument for any other body.
Result<std::string> filter_of_body(const json& body) {
  if (!body.is_object() || !body.contains("filter")) {
    return Error::problem(ErrorKind::kInvalidArgument, "filter", "field required");
  }
  auto filter = studio_filter(body["filter"]);
  if (!filter) return std::move(filter).take_error();
  if (!*filter) {
    return Error::problem(ErrorKind::kInvalidArgument, "filter", "a filter needs a rule");
  }
  return studio_filter_json(**filter).dump();
}

// The marks of a snapshot: [{"level", "start", "duration"}], whole numbers.
Result<json> snapshot_frames(const json& body) {
  auto frames = body.find("frames");
  if (frames == body.end() || !frames->is_array()) {
    return Error::problem(ErrorKind::kInvalidArgument, "frames", "a list of frames is required");
  }
  if (frames->size() > kMaxSnapshotFrames) {
    return Error::problem(ErrorKind::kInvalidArgument, "frames",
                          "at most " + std::to_string(kMaxSnapshotFrames) + " frames");
  }
  json kept = json::array();
  for (const json& frame : *frames) {
    json mark = json::object();
    for (const char* name : {"level", "start", "duration"}) {
      if (!frame.is_object() || !frame.contains(name) || !frame[name].is_number()) {
        return Error::problem(ErrorKind::kInvalidArgument, std::string("frames.") + name,
                              "a number is required");
      }
      mark[name] = frame[name];
    }
    kept.push_back(std::move(mark));
  }
  return kept;
}

}  // namespace

std::vector<Route> StudioEndpoints::routes() {
  constexpr Roles kRead = kOperatorRole | kReaderRole;
  auto route = [this](verb method, std::string_view pattern, Work work, Body body,
                      http::Response (StudioEndpoints::*serve)(const Call&)) {
    return Route{method, pattern, Auth::kBearer, kRead, work, body, handler(this, serve)};
  };
  auto read = [&](std::string_view pattern, http::Response (StudioEndpoints::*serve)(const Call&)) {
    return route(verb::get, pattern, Work::kStore, Body::kNone, serve);
  };
  return {
      read("/api/services", &StudioEndpoints::services),
      read("/api/overview", &StudioEndpoints::overview),
      read("/api/overview/services", &StudioEndpoints::overview_services),
      route(verb::get, "/api/api_key", Work::kInline, Body::kNone, &StudioEndpoints::api_key),
      read("/api/metrics/summary", &StudioEndpoints::summary),
      read("/api/metrics/nodes_cores/summary", &StudioEndpoints::nodes_cores_summary),
      read("/api/metrics/instance_type_count", &StudioEndpoints::instance_type_count),
      read("/api/metrics/cpu_trend", &StudioEndpoints::cpu_trend),
      read("/api/metrics/graph", &StudioEndpoints::usage_graph),
      read("/api/metrics/graph/nodes_and_cores", &StudioEndpoints::nodes_and_cores_graph),
      read("/api/v1/filters/tags/{}", &StudioEndpoints::filter_values),
      read("/api/v1/filters/service/{}", &StudioEndpoints::saved_filters),
      route(verb::post, "/api/v1/filters/service/{}", Work::kStore, Body::kSmall,
            &StudioEndpoints::save_filter),
      route(verb::put, "/api/v1/filters", Work::kStore, Body::kSmall,
            &StudioEndpoints::replace_filter),
      route(verb::delete_, "/api/v1/filters/{}", Work::kStore, Body::kNone,
            &StudioEndpoints::delete_filter),
      route(verb::post, "/api/snapshots", Work::kStore, Body::kSmall,
            &StudioEndpoints::save_snapshot),
      read("/api/snapshots/{}", &StudioEndpoints::snapshot),
      route(verb::get, "/api/metrics/html_metadata", Work::kInline, Body::kNone,
            &StudioEndpoints::html_report),
      route(verb::get, "/api/perfspect/download_report", Work::kInline, Body::kNone,
            &StudioEndpoints::no_report),
      route(verb::get, "/api/metrics/adhoc_flamegraphs", Work::kInline, Body::kNone,
            &StudioEndpoints::adhoc_flamegraphs),
      route(verb::get, "/api/metrics/adhoc_flamegraph_content", Work::kInline, Body::kNone,
            &StudioEndpoints::no_report),
  };
}

// Never an error for "none": the UI's Profiles page waits for a successful answer for ever.
http::Response StudioEndpoints::services(const Call&) {
  storage::TimePoint now = store_.now();
  auto hosts = store_.service_hosts(now - std::chrono::hours(24 * 7));
  if (!hosts) return store_failure(hosts.error());
  auto spans = store_.service_data_spans(storage::TimePoint());
  if (!spans) return store_failure(spans.error());
  json list = service_list(*hosts, *spans);
  if (list.empty()) return no_content();
  return json_ok(list);
}

http::Response StudioEndpoints::overview(const Call&) {
  storage::TimePoint now = store_.now();
  auto hosts = store_.service_hosts(now - std::chrono::hours(24));
  if (!hosts) return store_failure(hosts.error());
  auto spans = store_.service_data_spans(now - std::chrono::hours(48));
  if (!spans) return store_failure(spans.error());
  return json_ok(fleet_overview(*hosts, *spans, storage::to_unix_ms(now)));
}

http::Response StudioEndpoints::overview_services(const Call&) {
  storage::TimePoint since = store_.now() - std::chrono::hours(24 * 30);
  auto hosts = store_.service_hosts(since);
  if (!hosts) return store_failure(hosts.error());
  auto spans = store_.service_data_spans(since);
  if (!spans) return store_failure(spans.error());
  return json_ok(service_overviews(*hosts, *spans));
}

// Whoever opens the install page reads this: never a real token.
http::Response StudioEndpoints::api_key(const Call&) {
  return json_ok({{"apiKey", "<an agent token from the server's tokens file>"}});
}

http::Response StudioEndpoints::summary(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    UploadSelection selection = upload_selection(view.filter, {Label::kContainerEnvName});
    if (selection.none) return no_content();
    auto rows = store_.upload_metrics(uploads_in(view, kOneSlot));
    if (!rows) return store_failure(rows.error());
    auto summary = usage_summary(selection.picked(std::move(*rows)));
    return summary ? json_ok(*summary) : no_content();
  });
}

http::Response StudioEndpoints::nodes_cores_summary(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    UploadSelection selection = upload_selection(view.filter, {Label::kContainerEnvName});
    if (selection.none) return no_content();
    auto rows = store_.upload_metrics(uploads_in(view, kOneSlot));
    if (!rows) return store_failure(rows.error());
    bool ignore_zeros = call.query_value("ignoreZeros") != "false";
    auto figures = nodes_and_cores(selection.picked(std::move(*rows)),
                                   view.to_ms() - view.from_ms(), ignore_zeros);
    return figures ? json_ok(*figures) : no_content();
  });
}

http::Response StudioEndpoints::instance_type_count(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    UploadSelection selection = upload_selection(view.filter, {Label::kContainerEnvName});
    if (selection.none) return json_ok(json::array());
    auto rows = store_.upload_metrics(uploads_in(view, kOneSlot));
    if (!rows) return store_failure(rows.error());
    return json_ok(instance_type_counts(selection.picked(std::move(*rows))));
  });
}

// Numbers always: a 204 shows as NaN.
http::Response StudioEndpoints::cpu_trend(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    UploadSelection selection = upload_selection(view.filter, {Label::kContainerEnvName});
    HostSlots now;
    HostSlots before;
    if (!selection.none) {
      auto rows = store_.upload_metrics(uploads_in(view, kOneSlot));
      if (!rows) return store_failure(rows.error());
      int64_t shift = trend_shift_ms(view.to_ms() - view.from_ms());
      storage::UploadMetricsQuery earlier{view.range.service, view.from_ms() - shift,
                                          view.to_ms() - shift, kOneSlot};
      auto earlier_rows = store_.upload_metrics(earlier);
      if (!earlier_rows) return store_failure(earlier_rows.error());
      now = selection.picked(std::move(*rows));
      before = selection.picked(std::move(*earlier_rows));
    }
    return json_ok(usage_trend(now, before));
  });
}

http::Response StudioEndpoints::usage_graph(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    auto slot = slot_of(call, view, false);
    if (!slot) return invalid_request(slot.error(), "query");
    UploadSelection selection = upload_selection(view.filter, {Label::kContainerEnvName});
    if (selection.none) return no_content();
    auto rows = store_.upload_metrics(uploads_in(view, *slot));
    if (!rows) return store_failure(rows.error());
    return json_ok(usage_by_slot(selection.picked(std::move(*rows))));
  });
}

http::Response StudioEndpoints::nodes_and_cores_graph(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    auto slot = slot_of(call, view, true);
    if (!slot) return invalid_request(slot.error(), "query");
    UploadSelection selection =
        upload_selection(view.filter, {Label::kContainerName, Label::kContainerEnvName});
    if (selection.none) return no_content();
    auto rows = store_.upload_metrics(uploads_in(view, *slot));
    if (!rows) return store_failure(rows.error());
    return json_ok(nodes_and_cores_by_slot(selection.picked(std::move(*rows)), *slot));
  });
}

// The values of one label with samples in the range, most samples first; the samples as text.
http::Response StudioEndpoints::filter_values(const Call& call) {
  std::optional<Label> label = studio_label(call.params[0]);
  if (!label) {
    return invalid_request(Error::problem(ErrorKind::kInvalidArgument, "tag",
                                          "one of " + std::string(kStudioLabelNames)),
                           "path");
  }
  auto range = studio_range(call);
  if (!range) return invalid_request(range.error(), "query");
  auto keys = store_.label_samples(range->service, range->start, range->end);
  if (!keys) return store_failure(keys.error());
  std::map<std::string, int64_t> by_value;
  for (const auto& [key, samples] : *keys) {
    std::string value = storage::label_value(key, *label);
    if (!value.empty()) by_value[value] += samples;
  }
  if (by_value.empty()) return no_content();
  std::vector<std::pair<std::string, int64_t>> values(by_value.begin(), by_value.end());
  std::stable_sort(values.begin(), values.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json out = json::array();
  for (const auto& [value, samples] : values) {
    out.push_back({{"name", value}, {"samples", std::to_string(samples)}});
  }
  return json_ok(out);
}

http::Response StudioEndpoints::saved_filters(const Call& call) {
  auto filters = store_.saved_filters(call.params[0]);
  if (!filters) return store_failure(filters.error());
  json out = json::array();
  for (const storage::SavedFilter& saved : *filters) {
    json filter = json::parse(saved.filter, nullptr, /*allow_exceptions=*/false);
    if (filter.is_discarded()) continue;
    out.push_back({{"id", saved.id}, {"filter", std::move(filter)}});
  }
  return json_ok(out);
}

http::Response StudioEndpoints::save_filter(const Call& call) {
  if (auto named = check_service_name(call.params[0], "service_name"); !named) {
    return invalid_request(named.error(), "path");
  }
  auto body = ui_body(call, "filter");
  if (!body) return invalid_request(body.error());
  auto filter = filter_of_body(*body);
  if (!filter) return invalid_request(filter.error());
  auto id = store_.save_filter({0, call.params[0], std::move(*filter)});
  if (!id) return store_failure(id.error());
  return created(*id);
}

http::Response StudioEndpoints::replace_filter(const Call& call) {
  auto body = ui_body(call, "filter");
  if (!body) return invalid_request(body.error());
  auto id = body->is_object() ? id_in_body(*body) : std::nullopt;
  if (!id) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "id", "the saved filter's id is required"));
  }
  auto filter = filter_of_body(*body);
  if (!filter) return invalid_request(filter.error());
  auto replaced = store_.replace_filter(*id, *filter);
  if (!replaced) return store_failure(replaced.error());
  if (!*replaced) return not_found("no saved filter " + std::to_string(*id));
  return created(nullptr);
}

http::Response StudioEndpoints::delete_filter(const Call& call) {
  auto id = id_in_path(call);
  if (!id) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "filter_id", "a whole number above 0"), "path");
  }
  auto deleted = store_.delete_filter(*id);
  if (!deleted) return store_failure(deleted.error());
  if (!*deleted) return not_found("no saved filter " + call.params[0]);
  return no_content();
}

http::Response StudioEndpoints::save_snapshot(const Call& call) {
  auto body = ui_body(call, "snapshot");
  if (!body) return invalid_request(body.error());
  storage::Snapshot snapshot;
  auto service = body->find("serviceName");
  if (service != body->end() && service->is_string())
    snapshot.service = service->get<std::string>();
  if (auto named = check_service_name(snapshot.service, "serviceName"); !named) {
    return invalid_request(named.error());
  }
  for (auto [name, into] :
       {std::pair{"startTime", &snapshot.start_ms}, {"endTime", &snapshot.end_ms}}) {
    auto text = body->find(name);
    std::optional<storage::TimePoint> time;
    if (text != body->end() && text->is_string()) {
      time = parse_iso_time(text->get_ref<const std::string&>());
    }
    if (!time) {
      return invalid_request(Error::problem(ErrorKind::kInvalidArgument, name,
                                            "an ISO-8601 time such as 2026-11-28T09:15:00.000Z"));
    }
    *into = storage::to_unix_ms(*time);
  }
  auto frames = snapshot_frames(*body);
  if (!frames) return invalid_request(frames.error());
  snapshot.frames = frames->dump();
  if (auto filter = body->find("filter"); filter != body->end() && !filter->is_null()) {
    auto rules = studio_filter(*filter);
    if (!rules) return invalid_request(rules.error());
    if (*rules) {
      // The UI ignores the id: kept only as a number or a short text.
      json id = filter->is_object() ? filter->value("id", json("")) : json("");
      if (!id.is_number_integer() &&
          !(id.is_string() && id.get_ref<const std::string&>().size() <= 64)) {
        id = "";
      }
      json kept = {{"id", std::move(id)}, {"filter", studio_filter_json(**rules)}};
      snapshot.filter = kept.dump();
    }
  }
  auto id = store_.save_snapshot(snapshot);
  if (!id) return store_failure(id.error());
  return created(*id);
}

// As Studio: an unknown snapshot is every member null, not an error.
http::Response StudioEndpoints::snapshot(const Call& call) {
  auto id = parse_integer(call.params[0]);
  if (!id) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "snapshot_id", "a whole number"), "path");
  }
  auto found = store_.find_snapshot(*id);
  if (!found) return store_failure(found.error());
  if (!*found) {
    return json_ok(
        {{"startTime", nullptr}, {"endTime", nullptr}, {"frames", nullptr}, {"filter", nullptr}});
  }
  const storage::Snapshot& snapshot = **found;
  json filter = snapshot.filter ? json::parse(*snapshot.filter, nullptr, /*allow_exceptions=*/false)
                                : json(nullptr);
  json frames = json::parse(snapshot.frames, nullptr, /*allow_exceptions=*/false);
  return json_ok({{"startTime", studio_time_ms(snapshot.start_ms)},
                  {"endTime", studio_time_ms(snapshot.end_ms)},
                  {"frames", frames.is_discarded() ? json::array() : frames},
                  {"filter", filter.is_discarded() ? json(nullptr) : filter}});
}

// The UI asks for a host's report only with a HostName $eq in its filter.
http::Response StudioEndpoints::html_report(const Call& call) {
  return with_view(call, [&](const ViewQuery& view) {
    if (!view.filter || !view.filter->required_host()) {
      return error_response(status::bad_request, "filter: a HostName $eq rule picks the host");
    }
    return no_report(call);
  });
}

http::Response StudioEndpoints::adhoc_flamegraphs(const Call& call) {
  return with_view(call, [&](const ViewQuery&) { return json_ok(json::array()); });
}

http::Response StudioEndpoints::no_report(const Call&) {
  return not_found(
      "no report: this server keeps no agent-made HTML, which would run with the viewer's rights");
}

}  // namespace dormant::server::api
