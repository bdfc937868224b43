// Times as gProfiler writes them.
#pragma once

#include <chrono>
#include <string>

namespace dormant {

// "2026-11-22T10:00:00" (UTC, no fraction); with_millis adds ".123".
std::string iso_utc(std::chrono::system_clock::time_point time, bool with_millis = false);

}  // namespace dormant
