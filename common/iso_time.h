// Times as gProfiler writes them, and as its agents and Performance Studio's clients send them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace dormant {

// "2026-11-22T10:00:00" (UTC, no fraction); with_millis adds ".123".
std::string iso_utc(std::chrono::system_clock::time_point time, bool with_millis = false);

// An ISO-8601 date and time in the forms Studio's datetime fields take: 'T' or a space between
// date and time, seconds optional, any fraction (microseconds kept), and a zone that is 'Z',
// ±hh, ±hhmm or ±hh:mm. Without a zone the time is UTC: gProfiler writes naive UTC times.
// Years 1970 to 2199 only: beyond them a time point overflows or means nothing a profiler saw.
std::optional<std::chrono::system_clock::time_point> parse_iso_time(std::string_view text);

}  // namespace dormant
