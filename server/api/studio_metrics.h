// Performance Studio's metrics answers (the CPU and memory bar, nodes and cores, instance types,
// the week-over-week trend, the service view's graphs) computed from what the store keeps of each
// upload, summed by host and time slot (storage::HostSlotMetrics).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/rollup_records.h"
#include "server/storage/studio_records.h"

namespace dormant::server::api {

using HostSlots = std::vector<storage::HostSlotMetrics>;

// A count worked out in floating point, as JSON writes an integer.
inline int64_t as_count(double value) { return static_cast<int64_t>(value); }

// What a view's filter says of uploads' figures, which are a host's, not a container's: its
// HostName and InstanceType rules pick uploads; an $eq on one of `none_on` picks none (Studio
// answers "no data"); other container rules say nothing of a host and are left out.
struct UploadSelection {
  bool none = false;
  std::optional<storage::LabelFilter> filter;

  bool matches(const storage::HostSlotMetrics& row) const;
  HostSlots picked(HostSlots rows) const;
};
UploadSelection upload_selection(const std::optional<storage::LabelFilter>& filter,
                                 std::initializer_list<storage::Label> none_on);

// Studio's summary: mean and largest CPU of the uploads; mean, largest and 90th percentile of
// each host's largest memory; the hosts. Figures with no value are left out; none without rows.
std::optional<nlohmann::json> usage_summary(const HostSlots& rows);
// The same figures (without hosts) per slot, newest first, each with its "time".
nlohmann::json usage_by_slot(const HostSlots& rows);
// The trend badges: the summary now and compared, every figure a number (0 where none).
nlohmann::json usage_trend(const HostSlots& now, const HostSlots& compared);
// How far back cpu_trend's compared range is: a week, or as many whole weeks as the range spans.
int64_t trend_shift_ms(int64_t range_ms);

// avg_nodes and avg_cores over a range of `range_ms`: the hosts' profiled time (times their
// cores) over it, rounded up. With `ignore_zeros`, over the time from the first upload's start to
// the last one's end instead. None without rows.
std::optional<nlohmann::json> nodes_and_cores(const HostSlots& rows, int64_t range_ms,
                                              bool ignore_zeros);
// Per slot of `slot_ms`, newest first: average and most nodes and cores.
nlohmann::json nodes_and_cores_by_slot(const HostSlots& rows, int64_t slot_ms);
// Hosts per instance type, most first; hosts without one left out.
nlohmann::json instance_type_counts(const HostSlots& rows);

// Studio's automatic slot for a range: 15 s up to 30 min, 30 s up to 1 h, 15 min up to a day, 2 h
// up to 7 days, 6 h up to 14 days, a day beyond; never under `at_least_ms`.
int64_t automatic_slot_ms(int64_t range_ms, int64_t at_least_ms);
// requested_interval: "1 minute" … "6 hour" (`plural`: "1 minutes" … "6 hours", as
// graph/nodes_and_cores takes them); empty: none. kInvalidArgument for any other.
Result<std::optional<int64_t>> requested_slot_ms(std::string_view text, bool plural);

// The most slots a series answers: what a graph draws, and a bound on what it costs.
inline constexpr int64_t kMaxSlots = 10'000;
// The slot of a series over `range_ms`: requested_interval's (`plural` as above), else the
// automatic one, at least a minute; kInvalidArgument past kMaxSlots slots.
Result<int64_t> series_slot_ms(std::string_view requested, bool plural, int64_t range_ms);

}  // namespace dormant::server::api
