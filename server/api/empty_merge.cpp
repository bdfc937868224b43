#include "server/api/empty_merge.h"

#include <algorithm>
#include <set>

#include "common/iso_time.h"
#include "common/text.h"

namespace dormant::server::api {
namespace {

constexpr size_t kServicesNamed = 20;

// The services agents have spoken for: hosts that sent heartbeats, and profiles kept.
Result<std::set<std::string>> known_services(storage::Store& store) {
  std::set<std::string> services;
  auto hosts = store.service_hosts(storage::TimePoint{});
  if (!hosts) return std::move(hosts).take_error();
  for (const storage::ServiceHost& host : *hosts) services.insert(host.service);
  auto spans = store.service_data_spans(storage::TimePoint{});
  if (!spans) return std::move(spans).take_error();
  for (const storage::ServiceDataSpan& span : *spans) services.insert(span.service);
  return services;
}

std::string range_text(storage::TimePoint since, storage::TimePoint until) {
  return iso_utc(since) + "Z to " + iso_utc(until) + "Z";
}

}  // namespace

bool merged_nothing(const MergedProfile& merged) {
  return merged.stacks.empty() && merged.idle_samples == 0;
}

Result<std::string> why_nothing_merged(storage::Store& store, const MergeSelection& selection,
                                       std::string_view side) {
  const std::string& service = selection.service;
  auto services = known_services(store);
  if (!services) return std::move(services).take_error();
  if (!services->contains(service)) {
    std::string text = "service '" + service +
                       "' is unknown: no agent has sent a heartbeat or a profile under that name";
    if (services->empty()) return text + " (no agent has been heard from yet)";
    return text + " (services: " + join_first(*services, kServicesNamed, "'") + ")";
  }
  std::string what = "no profiles of '" + service + "'";
  if (selection.filter) what += " that match the filter";
  std::string where = side.empty() ? "" : " in " + std::string(side);
  storage::TimePoint now = store.now();
  auto span = store.data_span(service, selection.filter, now - std::chrono::hours(24 * 366), now);
  if (!span) return std::move(span).take_error();
  if (!*span) {
    return what + " yet: its hosts send heartbeats but no profile has come from them " +
           (selection.filter ? "with these labels" : "(start profiling first)");
  }
  return what + where + ", from " + range_text(selection.since, selection.until) +
         "; those there are span " + range_text((*span)->first, (*span)->second);
}

std::string overlap_error(storage::TimePoint since, storage::TimePoint until,
                          storage::TimePoint baseline_since, storage::TimePoint baseline_until) {
  storage::TimePoint shared_start = std::max(since, baseline_since);
  storage::TimePoint shared_end = std::min(until, baseline_until);
  if (shared_start >= shared_end) return "";
  return "the range and the baseline share " + range_text(shared_start, shared_end) +
         ": a profile there would count on both sides; make them apart";
}

}  // namespace dormant::server::api
