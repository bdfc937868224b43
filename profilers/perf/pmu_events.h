// The hardware events the kernel's PMUs expose, read from sysfs: nothing is spawned or opened,
// so an idle agent can report them in its heartbeat.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace dormant::profilers::perf {

// Of gProfiler's supported set (common/perf_events.h), the names of those some event source under
// `devices` offers: "cpu" on x86, "cpu_core" and "cpu_atom" on hybrid Intel parts,
// "armv8_pmuv3_0" and the like on arm64.
std::vector<std::string> pmu_events(
    const std::filesystem::path& devices = "/sys/bus/event_source/devices");

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
