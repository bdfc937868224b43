// Which PMU events a perf session tries (the host's are common/perf_events.h's pmu_events()).
#pragma once

#include <string>
#include <vector>

#include "common/perf_events.h"
#include "common/result.h"

namespace dormant::profilers::perf {

// The events perf tries, in order, for a session that asks for `requested` (gProfiler's names) on
// a host whose PMUs offer `available`: the requested ones the host has, then cpu-clock where
// cycles was asked for. None left is an error that says what this host cannot count.
Result<std::vector<std::string>> events_to_try(const std::vector<std::string>& requested,
                                               const std::vector<std::string>& available);

// Whether the event an earlier session recorded with may start a session that would try `events`
// (from events_to_try) without a trial recording: it is the first of them, or it is cpu-clock and
// only cycles comes before it (cycles is offered here but does not record).
bool known_event_applies(const std::string& known, const std::vector<std::string>& events);

}  // namespace dormant::profilers::perf
