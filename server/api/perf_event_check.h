// Before a start goes out: the perf events it asks for (additional_args.profiler_configs.perf
// .events, with perf not disabled) against those each target host says it supports
// (perf_supported_events in its heartbeats). A host that reported none supports none.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "wire/profiling_request.h"

namespace dormant::server::api {

// The events the request asks perf for, by gProfiler's names ("cpu-cycles" and "cpu/cycles/"
// are "cycles"); none when it asks for none or perf is disabled, and for stops.
std::vector<std::string> requested_perf_events(const wire::ProfilingRequest& request);

// The 422 that names each target host (the first 10, then how many more) and the events it
// lacks; nullopt when every host supports them all.
std::optional<Error> unsupported_perf_events(
    const wire::ProfilingRequest& request,
    const std::map<std::string, std::vector<std::string>>& supported_by_host);

}  // namespace dormant::server::api
