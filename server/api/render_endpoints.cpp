#include "server/api/render_endpoints.h"

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "common/iso_time.h"
#include "common/text.h"
#include "profile/collapsed.h"
#include "profile/flamegraph.h"
#include "profile/gpu_devices.h"
#include "profile/pprof/pprof.h"
#include "server/api/api_requests.h"
#include "server/api/content_policy.h"
#include "server/api/empty_merge.h"
#include "server/api/profile_merge.h"
#include "server/api/studio_flamegraph.h"
#include "server/api/studio_metrics.h"
#include "server/api/studio_queries.h"
#include "server/api/studio_series.h"
#include "server/api/wire_mapping.h"

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;
using bhttp::status;
using bhttp::verb;

enum class Format { kSvg, kCollapsed, kPprof };

Result<Format> format_parameter(const Call& call) {
  std::string_view format = call.query_value("format");
  if (format.empty() || format == "svg") return Format::kSvg;
  if (format == "collapsed") return Format::kCollapsed;
  if (format == "pprof") return Format::kPprof;
  return Error::invalid_argument("format: must be svg, collapsed or pprof");
}

bool keeps_idle(const Call& call) {
  std::string_view idle = call.query_value("idle");
  return idle == "1" || idle == "true";
}

// The labels a merge is narrowed by, as its query names them: each must hold.
constexpr std::array<std::pair<std::string_view, storage::Label>, 4> kMergeLabels = {{
    {"hostname", storage::Label::kHostName},
    {"container", storage::Label::kContainerName},
    {"pod", storage::Label::kPodName},
    {"namespace", storage::Label::kNamespace},
}};

// The stacks a merge takes, from the query; the time range from `since_name` and `until_name`:
// the day before `until` (now) when `since` is not given.
Result<MergeSelection> merge_selection(const Call& call, std::string_view since_name,
                                       std::string_view until_name, size_t max_stacks,
                                       storage::TimePoint now) {
  MergeSelection selection;
  selection.max_stacks = max_stacks;
  auto service = optional_parameter(call, "service");
  if (!service) {
    return Error::invalid_argument("service: the service whose profiles to merge is required");
  }
  selection.service = std::move(*service);
  if (!call.query_value("limit").empty()) {
    return Error::invalid_argument(
        "limit: a merge takes every profile of its time range (from rollups, at any number of "
        "profiles); narrow it with since and until instead");
  }
  storage::LabelFilter filter;
  for (const auto& [name, label] : kMergeLabels) {
    if (auto value = optional_parameter(call, name)) {
      filter.rules.push_back({label, true, std::move(*value)});
    }
  }
  if (!filter.rules.empty()) selection.filter = std::move(filter);
  selection.keep_idle = keeps_idle(call);
  auto since = time_parameter(call, since_name);
  if (!since) return std::move(since).take_error();
  auto until = time_parameter(call, until_name);
  if (!until) return std::move(until).take_error();
  selection.until = until->value_or(now);
  selection.since = since->value_or(selection.until - std::chrono::hours(24));
  if (selection.until < selection.since) {
    return Error::invalid_argument(std::string(until_name) + " (" + iso_utc(selection.until) +
                                   "Z) is before " + std::string(since_name) + " (" +
                                   iso_utc(selection.since) + "Z): the range is inverted");
  }
  if (selection.until == selection.since) {
    return Error::invalid_argument(std::string(since_name) + ", " + std::string(until_name) +
                                   ": the range is empty (both " + iso_utc(selection.since) + "Z)");
  }
  return selection;
}

// "web on web-01 in container box", "web not in pod a or in namespace b".
std::string selection_title(const MergeSelection& selection) {
  std::string title = selection.service;
  if (!selection.filter) return title;
  std::string_view joint;
  for (const storage::LabelRule& rule : selection.filter->rules) {
    title += joint;
    joint = selection.filter->any ? " or" : "";
    title += rule.equal ? " " : " not ";
    if (rule.label == storage::Label::kHostName) {
      title += "on ";
    } else {
      title += "in " + std::string(storage::label_name(rule.label)) + " ";
    }
    title += rule.value;
  }
  return title;
}

std::string idle_note(const MergedProfile& merged) {
  return std::to_string(merged.idle_samples) + " idle samples left out (idle=1 keeps them)";
}

// "12 profiles from 3 hosts, 2026-11-26T10:00:00Z to 2026-11-26T11:00:00Z; 4,567 idle samples
// left out (idle=1 keeps them)".
std::string merge_subtitle(const MergedProfile& merged) {
  std::string text;
  if (merged.profiles) {
    text = std::to_string(*merged.profiles) + (*merged.profiles == 1 ? " profile" : " profiles");
  } else {
    text = "profiles";
  }
  text += " from " + std::to_string(merged.hosts.size()) +
          (merged.hosts.size() == 1 ? " host" : " hosts");
  if (merged.first_start && merged.last_end) {
    text += ", " + iso_utc(*merged.first_start) + "Z to " + iso_utc(*merged.last_end) + "Z";
  }
  return text + "; " + idle_note(merged);
}

void describe_merge(http::Response& response, const MergedProfile& merged) {
  if (merged.profiles) response.set("X-Dormant-Profiles", std::to_string(*merged.profiles));
  response.set("X-Dormant-Idle-Samples-Left-Out", std::to_string(merged.idle_samples));
  if (merged.range_start && merged.range_end) {
    response.set("X-Dormant-Range",
                 iso_utc(*merged.range_start) + "/" + iso_utc(*merged.range_end));
  }
}

http::Response svg_response(profile::FlamegraphOptions options, const profile::StackTable& stacks) {
  options.nonce = new_nonce();
  http::Response response =
      text_response("image/svg+xml", profile::render_flamegraph(stacks, options));
  restrict_document(response, options.nonce);
  return response;
}

// A drawn SVG as the cache keeps it: where its two nonces are (the first and the last attribute
// of that name: nothing from the profile can hold one, its quotes are escaped).
std::shared_ptr<const CachedSvg> cacheable(std::string svg, uint64_t idle_samples) {
  constexpr std::string_view kNonce = " nonce=\"";
  auto cached = std::make_shared<CachedSvg>();
  cached->style_nonce = svg.find(kNonce) + kNonce.size();
  cached->script_nonce = svg.rfind(kNonce) + kNonce.size();
  cached->svg = std::move(svg);
  cached->idle_samples = idle_samples;
  return cached;
}

// The cached SVG with a nonce of its own.
http::Response cached_svg_response(const CachedSvg& cached) {
  const std::string nonce = new_nonce();
  std::string svg = cached.svg;
  svg.replace(cached.style_nonce, nonce.size(), nonce);
  svg.replace(cached.script_nonce, nonce.size(), nonce);
  http::Response response = text_response("image/svg+xml", std::move(svg));
  restrict_document(response, nonce);
  return response;
}

http::Response pprof_response(const MergedProfile& merged, const std::string& file_stem) {
  profile::PprofOptions options;
  options.frequency_hz = merged.frequency_hz;
  if (merged.first_start && merged.last_end) {
    options.time_nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(merged.first_start->time_since_epoch())
            .count();
    options.duration_nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(*merged.last_end - *merged.first_start)
            .count();
  }
  auto bytes = profile::write_pprof(merged.stacks, options);
  if (!bytes) return error_response(status::unprocessable_entity, bytes.error().message());
  http::Response response = text_response("application/octet-stream", std::move(*bytes));
  response.set(bhttp::field::content_disposition,
               "attachment; filename=\"" + file_stem + ".pb.gz\"");
  response.set("X-Content-Type-Options", "nosniff");
  return response;
}

http::Response busy_merging() {
  http::Response response =
      error_response(status::service_unavailable, std::string(kMergesBusy) + "; try again shortly");
  response.set(bhttp::field::retry_after, "5");
  return response;
}

// A file name made of the service's letters, digits, '-', '_' and '.' only.
std::string file_stem(std::string_view name) {
  std::string stem;
  for (char c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
    stem += plain ? c : '_';
  }
  return stem.empty() ? "profile" : stem;
}

}  // namespace

std::vector<Route> RenderEndpoints::routes() {
  constexpr Roles kRead = kOperatorRole | kReaderRole;
  auto read = [this](std::string_view pattern, Work work,
                     http::Response (RenderEndpoints::*method)(const Call&)) {
    return Route{verb::get, pattern,     Auth::kBearer,        kRead,
                 work,      Body::kNone, handler(this, method)};
  };
  return {
      read("/api/profiles/{}/flamegraph", Work::kRender, &RenderEndpoints::profile_flamegraph),
      read("/api/profiles/{}/pprof", Work::kRender, &RenderEndpoints::profile_pprof),
      read("/api/profiles/{}/gpus", Work::kRender, &RenderEndpoints::profile_gpus),
      read("/api/flamegraph", Work::kMerge, &RenderEndpoints::merged_flamegraph),
      read("/api/flamegraph/diff", Work::kMerge, &RenderEndpoints::diff_flamegraph),
      read("/api/flamegraph/datetime_with_data", Work::kStore, &RenderEndpoints::studio_data_span),
      // The UI's own spelling, with its trailing slash.
      read("/api/flamegraph/download_svg/", Work::kMerge, &RenderEndpoints::studio_svg_download),
      read("/api/flamegraph/download_svg", Work::kMerge, &RenderEndpoints::studio_svg_download),
      read("/api/metrics/function_cpu", Work::kMerge, &RenderEndpoints::studio_function_share),
      read("/api/metrics/samples", Work::kMerge, &RenderEndpoints::studio_samples),
  };
}

http::Response RenderEndpoints::merged_flamegraph(const Call& call) {
  if (has_parameter(call, "serviceName")) return studio_flamegraph_tree(call);
  auto format = format_parameter(call);
  if (!format) return error_response(status::bad_request, format.error().message());
  auto selection = merge_selection(call, "since", "until", options_.merge_max_stacks, store_.now());
  if (!selection) return error_response(status::bad_request, selection.error().message());
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto merged = merge_rollups(store_, *selection);
  if (!merged) return store_failure(merged.error());
  if (merged_nothing(*merged)) return nothing_merged(*selection, "");
  http::Response response;
  if (*format == Format::kPprof) {
    response = pprof_response(*merged, file_stem(selection->service));
  } else if (*format == Format::kCollapsed) {
    response =
        text_response("text/plain; charset=utf-8",
                      profile::write_collapsed(merged->stacks, {{"merge", merged->summary()}}));
  } else {
    profile::FlamegraphOptions options;
    options.max_frames = options_.svg_max_frames;
    options.title = selection_title(*selection);
    options.subtitle = merge_subtitle(*merged);
    response = svg_response(std::move(options), merged->stacks);
  }
  describe_merge(response, *merged);
  return response;
}

// Studio's answers have no error for "no data": an empty root, never 204 or [] (either replaces
// its whole UI with an error page).
http::Response RenderEndpoints::studio_flamegraph_tree(const Call& call) {
  if (has_parameter(call, "service")) {
    return error_response(status::bad_request,
                          "service, serviceName: ours takes service, Performance Studio's UI "
                          "serviceName; not both");
  }
  auto range = studio_range(call);
  if (!range) return invalid_request(range.error(), "query");
  auto stacks_count = integer_parameter(call, "stacksCount", 10000, 1, 1'000'000);
  if (!stacks_count) return invalid_request(stacks_count.error(), "query");
  auto filter = studio_filter_parameter(call);
  if (!filter) return error_response(status::bad_request, filter.error().message());
  auto begun = std::chrono::steady_clock::now();
  MergeSelection selection;
  selection.service = range->service;
  selection.since = range->start;
  selection.until = range->end;
  selection.filter = std::move(*filter);
  selection.max_stacks = options_.merge_max_stacks;
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto merged = merge_rollups(store_, selection);
  if (!merged) return store_failure(merged.error());
  StudioTreeOptions tree_options;
  tree_options.max_frames = static_cast<size_t>(*stacks_count);
  tree_options.languages = call.query_value("enrichment") == "lang";
  nlohmann::json tree = studio_flamegraph(merged->stacks, tree_options);
  tree["exec_time"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  http::Response response = json_ok(tree);
  describe_merge(response, *merged);
  return response;
}

http::Response RenderEndpoints::studio_data_span(const Call& call) {
  std::string service(call.query_value("serviceName"));
  if (service.empty()) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "serviceName", "field required"), "query");
  }
  auto filter = studio_filter_parameter(call);
  if (!filter) return error_response(status::bad_request, filter.error().message());
  storage::TimePoint now = store_.now();
  auto span = store_.data_span(service, *filter, now - std::chrono::hours(24 * 366), now);
  if (!span) return store_failure(span.error());
  if (!*span) return no_content();
  return json_ok({{"firstDateTime", studio_time((*span)->first)},
                  {"lastDateTime", studio_time((*span)->second)}});
}

namespace {

// Studio's name for a range, from its exact length: "hourly" for an hour…, else "custom".
std::string range_name(storage::TimePoint start, storage::TimePoint end) {
  using std::chrono::hours;
  using std::chrono::minutes;
  const std::pair<storage::TimePoint::duration, const char*> named[] = {
      {minutes(15), "15min"}, {minutes(30), "30min"}, {hours(1), "hourly"},
      {hours(6), "6hour"},    {hours(24), "daily"},   {hours(24 * 7), "weekly"},
  };
  for (const auto& [length, name] : named) {
    if (end - start == length) return name;
  }
  return "custom";
}

// The selection of a Studio data call: its common three and filter.
Result<MergeSelection> studio_selection(const Call& call, size_t max_stacks) {
  auto range = studio_range(call);
  if (!range) return std::move(range).take_error();
  auto filter = studio_filter_parameter(call);
  if (!filter) return std::move(filter).take_error();
  MergeSelection selection;
  selection.service = range->service;
  selection.since = range->start;
  selection.until = range->end;
  selection.filter = std::move(*filter);
  selection.max_stacks = max_stacks;
  return selection;
}

int64_t range_ms(const MergeSelection& selection) {
  return storage::to_unix_ms(selection.until) - storage::to_unix_ms(selection.since);
}

http::Response refused_selection(const Error& error) {
  // The common three are validation (422), as on Studio; a bad filter is 400.
  if (!error.problems().empty()) return invalid_request(error, "query");
  return error_response(status::bad_request, error.message());
}

}  // namespace

http::Response RenderEndpoints::studio_svg_download(const Call& call) {
  auto selection = studio_selection(call, options_.merge_max_stacks);
  if (!selection) return refused_selection(selection.error());
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto merged = merge_rollups(store_, *selection);
  if (!merged) return store_failure(merged.error());
  profile::FlamegraphOptions options;
  options.max_frames = options_.svg_max_frames;
  options.title = selection_title(*selection);
  options.subtitle = merge_subtitle(*merged);
  http::Response response = svg_response(std::move(options), merged->stacks);
  response.set(bhttp::field::content_type, "application/octet-stream");
  response.set(bhttp::field::content_disposition,
               "attachment; filename=" + file_stem(selection->service) + "_" +
                   range_name(selection->since, selection->until) + ".svg");
  describe_merge(response, *merged);
  return response;
}

http::Response RenderEndpoints::studio_samples(const Call& call) {
  auto selection = studio_selection(call, options_.merge_max_stacks);
  if (!selection) return refused_selection(selection.error());
  auto slot_ms =
      series_slot_ms(call.query_value("requested_interval"), false, range_ms(*selection));
  if (!slot_ms) return invalid_request(slot_ms.error(), "query");
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto series = studio_series(store_, *selection, *slot_ms, "");
  if (!series) return store_failure(series.error());
  nlohmann::json points = nlohmann::json::array();
  for (auto each = series->rbegin(); each != series->rend(); ++each) {
    points.push_back({{"time", studio_time_ms(each->slot_ms)}, {"samples", each->samples}});
  }
  return json_ok(points);
}

http::Response RenderEndpoints::studio_function_share(const Call& call) {
  auto selection = studio_selection(call, options_.merge_max_stacks);
  if (!selection) return refused_selection(selection.error());
  std::string function(call.query_value("functionName"));
  if (function.empty()) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "functionName", "field required"), "query");
  }
  auto slot_ms = series_slot_ms("", false, range_ms(*selection));
  if (!slot_ms) return invalid_request(slot_ms.error(), "query");
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto series = studio_series(store_, *selection, *slot_ms, function);
  if (!series) return store_failure(series.error());
  nlohmann::json points = nlohmann::json::array();
  for (auto each = series->rbegin(); each != series->rend(); ++each) {
    if (each->holding == 0) continue;
    points.push_back({{"time", studio_time_ms(each->slot_ms)},
                      {"cpu_percentage",
                       static_cast<double>(each->holding) / static_cast<double>(each->samples)}});
  }
  return json_ok(points);
}

http::Response RenderEndpoints::nothing_merged(const MergeSelection& selection,
                                               std::string_view side) {
  auto why = why_nothing_merged(store_, selection, side);
  if (!why) return store_failure(why.error());
  return error_response(status::not_found, *why);
}

http::Response RenderEndpoints::diff_flamegraph(const Call& call) {
  auto format = format_parameter(call);
  if (!format) return error_response(status::bad_request, format.error().message());
  if (*format != Format::kSvg) {
    return error_response(status::bad_request, "format: a differential flamegraph is svg only");
  }
  if (call.query_value("baseline_since").empty() && call.query_value("baseline_until").empty()) {
    return error_response(status::bad_request,
                          "baseline_since, baseline_until: the baseline's time range is required");
  }
  auto selection = merge_selection(call, "since", "until", options_.merge_max_stacks, store_.now());
  if (!selection) return error_response(status::bad_request, selection.error().message());
  auto baseline_selection = merge_selection(call, "baseline_since", "baseline_until",
                                            options_.merge_max_stacks, store_.now());
  if (!baseline_selection) {
    return error_response(status::bad_request, baseline_selection.error().message());
  }
  if (std::string overlap = overlap_error(selection->since, selection->until,
                                          baseline_selection->since, baseline_selection->until);
      !overlap.empty()) {
    return error_response(status::bad_request, overlap);
  }
  auto slot = merge_slots_.try_take();
  if (!slot) return busy_merging();
  auto merged = merge_rollups(store_, *selection);
  if (!merged) return store_failure(merged.error());
  if (merged_nothing(*merged)) return nothing_merged(*selection, "the range");
  auto baseline = merge_rollups(store_, *baseline_selection);
  if (!baseline) return store_failure(baseline.error());
  if (merged_nothing(*baseline)) return nothing_merged(*baseline_selection, "the baseline");
  // Both are read in whole buckets (minutes at the finest): ranges that meet inside a minute
  // would both read it.
  if (merged->range_start && merged->range_end && baseline->range_start && baseline->range_end) {
    if (std::string overlap = overlap_error(*merged->range_start, *merged->range_end,
                                            *baseline->range_start, *baseline->range_end);
        !overlap.empty()) {
      return error_response(status::bad_request,
                            overlap +
                                " (profiles are read in whole buckets: minutes, and hours or "
                                "days past their retention; ranges that meet must meet on "
                                "a bucket's edge)");
    }
  }
  profile::FlamegraphOptions options;
  options.max_frames = options_.svg_max_frames;
  options.title = selection_title(*selection) + ": change from the baseline";
  options.subtitle = merge_subtitle(*merged) + " | baseline: " + merge_subtitle(*baseline);
  options.baseline = &baseline->stacks;
  http::Response response = svg_response(std::move(options), merged->stacks);
  describe_merge(response, *merged);
  if (baseline->profiles) {
    response.set("X-Dormant-Baseline-Profiles", std::to_string(*baseline->profiles));
  }
  return response;
}

namespace {

struct OneProfile {
  storage::StoredProfile stored;
  MergedProfile merged;  // of this profile alone, so that it is filtered and described the same
};

// The row of the profile "/api/profiles/{gpid}/…" names: kNotFound for a gpid that is not one.
Result<storage::StoredProfile> profile_row(storage::Store& store, const Call& call) {
  auto gpid = gpid_of(call);
  if (!gpid) return Error(ErrorKind::kNotFound, "no profile " + call.params[0]);
  return store.get_profile(*gpid);
}

Result<profile::CollapsedProfile> parsed_profile(storage::Store& store, int64_t gpid) {
  auto text = store.read_profile(gpid);  // freed once parsed
  if (!text) return std::move(text).take_error();
  auto read = profile::read_collapsed(*text);
  if (!read) {
    return Error::invalid_argument(
        "profile " + std::to_string(gpid) +
        " is stored but is not a valid collapsed profile: " + read.error().message());
  }
  return read;
}

// "gpu=N": the stacks of device N alone; nullopt without it.
Result<std::optional<uint32_t>> chosen_gpu(const Call& call) {
  std::string_view text = call.query_value("gpu");
  if (text.empty()) return std::optional<uint32_t>();
  auto device = profile::gpu_device_of_frame("[GPU " + std::string(text) + "]");
  if (!device) return Error::invalid_argument("gpu: a device's number, such as 0");
  return std::optional<uint32_t>(*device);
}

Result<OneProfile> one_profile(storage::Store& store, storage::StoredProfile stored,
                               const Call& call) {
  auto parsed = parsed_profile(store, stored.gpid);
  if (!parsed) return std::move(parsed).take_error();
  OneProfile one{std::move(stored), {}};
  one.merged.add_profile(*parsed, keeps_idle(call));
  one.merged.hosts.insert(one.stored.hostname);
  one.merged.first_start = one.stored.start_time;
  one.merged.last_end = one.stored.end_time;
  return one;
}

}  // namespace

// The row is read first, so that a profile deleted since it was drawn is not served.
http::Response RenderEndpoints::profile_flamegraph(const Call& call) {
  auto gpu = chosen_gpu(call);
  if (!gpu) return error_response(status::bad_request, gpu.error().message());
  auto stored = profile_row(store_, call);
  if (!stored) return store_failure(stored.error());
  const std::string cache_key = std::to_string(stored->gpid) + (keeps_idle(call) ? " idle" : "") +
                                (*gpu ? " gpu " + std::to_string(**gpu) : "") + " frames " +
                                std::to_string(options_.svg_max_frames);
  std::shared_ptr<const CachedSvg> cached = svg_cache_.find(cache_key);
  const bool hit = cached != nullptr;
  if (!hit) {
    auto one = one_profile(store_, std::move(*stored), call);
    if (!one) return store_failure(one.error());
    profile::FlamegraphOptions options;
    options.max_frames = options_.svg_max_frames;
    options.title = one->stored.service_name + ": " + one->stored.hostname;
    if (*gpu) {
      one->merged.stacks = profile::stacks_of_gpu_device(one->merged.stacks, **gpu);
      options.title += ", GPU " + std::to_string(**gpu) + " alone";
    }
    options.subtitle = iso_time(one->stored.start_time) + " to " + iso_time(one->stored.end_time) +
                       "; " + idle_note(one->merged);
    options.nonce = new_nonce();
    cached = cacheable(profile::render_flamegraph(one->merged.stacks, options),
                       one->merged.idle_samples);
    svg_cache_.put(cache_key, cached);
  }
  http::Response response = cached_svg_response(*cached);
  response.set("X-Dormant-Profiles", "1");
  response.set("X-Dormant-Idle-Samples-Left-Out", std::to_string(cached->idle_samples));
  if (hit) response.set("X-Dormant-Cached", "1");
  return response;
}

http::Response RenderEndpoints::profile_gpus(const Call& call) {
  auto stored = profile_row(store_, call);
  if (!stored) return store_failure(stored.error());
  auto parsed = parsed_profile(store_, stored->gpid);
  if (!parsed) return store_failure(parsed.error());
  return json_ok({{"gpid", stored->gpid}, {"devices", profile::gpu_devices(*parsed)}});
}

http::Response RenderEndpoints::profile_pprof(const Call& call) {
  auto stored = profile_row(store_, call);
  if (!stored) return store_failure(stored.error());
  auto one = one_profile(store_, std::move(*stored), call);
  if (!one) return store_failure(one.error());
  http::Response response =
      pprof_response(one->merged, "profile_" + std::to_string(one->stored.gpid));
  describe_merge(response, one->merged);
  return response;
}

}  // namespace dormant::server::api
