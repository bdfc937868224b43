// What Performance Studio's web UI sends its data calls: the service and the range every call
// carries ("the common three": serviceName, startTime, endTime, ISO-8601 with
// milliseconds) and the filter of its filter panel, the JSON text of
// {"id": …, "filter": {"$and"|"$or": [{"HostName"|"ContainerName"|"ContainerEnvName"|
// "InstanceType": {"$eq"|"$neq": "value"}}, …]}}; ours also takes "PodName" and "Namespace".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/api/call.h"
#include "server/storage/records.h"

namespace dormant::server::api {

// Whether the query names `name` at all, even empty.
bool has_parameter(const Call& call, std::string_view name);

// A time as the UI reads it: UTC with its 'Z' ("2026-11-28T09:15:00Z"); a naive one would be
// read as the browser's local time.
std::string studio_time(storage::TimePoint time);
inline std::string studio_time_ms(int64_t ms) { return studio_time(storage::from_unix_ms(ms)); }

struct StudioRange {
  std::string service;
  storage::TimePoint start;
  storage::TimePoint end;
};

// The common three, each required: kInvalidArgument naming what is missing or wrong (answered
// 422, as Studio's validation does).
Result<StudioRange> studio_range(const Call& call);

// The labels' names, for messages.
inline constexpr std::string_view kStudioLabelNames =
    "HostName, ContainerName, ContainerEnvName, InstanceType, PodName or Namespace";
// The label a filter's rule or a tag names ("HostName", …); none for another name.
std::optional<storage::Label> studio_label(std::string_view tag);
// A filter as its JSON: {"id": …, "filter": {…}}, or the {"$and": […]} inside it. None for an
// empty one; kInvalidArgument for any other shape, label or operator.
Result<std::optional<storage::LabelFilter>> studio_filter(const nlohmann::json& filter);
// A filter as the UI writes it: {"$and"|"$or": [{"HostName": {"$eq": "web-01"}}, …]}.
nlohmann::json studio_filter_json(const storage::LabelFilter& filter);
// The `filter` parameter's text; none when absent or empty.
Result<std::optional<storage::LabelFilter>> studio_filter_parameter(const Call& call);

}  // namespace dormant::server::api
