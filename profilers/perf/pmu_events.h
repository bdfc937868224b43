// The hardware events the kernel's PMUs expose, read from sysfs: nothing is spawned or opened,
// so an idle agent can report them in its heartbeat.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dormant::profilers::perf {

// Of gProfiler's supported set (common/perf_events.h), the names of those some event source under
// `devices` offers: "cpu" on x86, "cpu_core" and "cpu_atom" on hybrid Intel parts,
// "armv8_pmuv3_0" and the like on arm64.
std::vector<std::string> pmu_events(
    const std::filesystem::path& devices = "/sys/bus/event_source/devices");

}  // namespace dormant::profilers::perf
