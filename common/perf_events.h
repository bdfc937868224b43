// The PMU events perf may be asked for: gProfiler's supported set, each with the name the kernel
// gives it in sysfs.
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"

namespace dormant {

struct PerfEvent {
  std::string_view name;        // gProfiler's and perf's name
  std::string_view sysfs_name;  // under /sys/bus/event_source/devices/*/events/
};

inline constexpr std::array<PerfEvent, 8> kPerfEvents = {{
    {"cycles", "cpu-cycles"},
    {"instructions", "instructions"},
    {"cache-misses", "cache-misses"},
    {"cache-references", "cache-references"},
    {"branch-misses", "branch-misses"},
    {"branch-instructions", "branch-instructions"},
    {"stalled-cycles-frontend", "stalled-cycles-frontend"},
    {"stalled-cycles-backend", "stalled-cycles-backend"},
}};

// The event perf does without a PMU (most virtual machines have none), as perf itself falls back
// from cycles.
inline constexpr std::string_view kSoftwareCpuEvent = "cpu-clock";

// gProfiler's name for `name`, which may be the kernel's ("cpu-cycles" is "cycles"); nullopt for
// an event outside the supported set.
constexpr std::optional<std::string_view> perf_event_name(std::string_view name) {
  for (const PerfEvent& event : kPerfEvents) {
    if (event.name == name || event.sysfs_name == name) return event.name;
  }
  return std::nullopt;
}

// "cycles, instructions, ...": for messages that say what may be asked for.
inline std::string supported_perf_event_names() {
  std::vector<std::string_view> names;
  for (const PerfEvent& event : kPerfEvents) names.push_back(event.name);
  return join(names, ", ");
}

// Of the supported set, the names of those some event source under `devices` offers ("cpu" on
// x86, "cpu_core" and "cpu_atom" on hybrid Intel parts, "armv8_pmuv3_0" and the like on arm64),
// read from sysfs: nothing is spawned or opened, so an idle agent reports them from its start.
std::vector<std::string> pmu_events(
    const std::filesystem::path& devices = "/sys/bus/event_source/devices");

}  // namespace dormant
