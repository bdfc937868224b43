// The PMU events perf may be asked for: gProfiler's supported set, each with the name the kernel
// gives it in sysfs.
#pragma once

#include <array>
#include <string_view>

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

}  // namespace dormant
