// What a session profiles: gProfiler's --mode, the same word in the agent's flags, on the wire
// and in the server's database.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dormant {

enum class ProfilingMode { kCpu, kAllocation, kNone };

// The names in declaration order: "cpu", "allocation", "none".
inline constexpr std::array<std::string_view, 3> kProfilingModeNames = {"cpu", "allocation",
                                                                        "none"};

constexpr std::string_view to_string(ProfilingMode mode) {
  auto index = static_cast<std::size_t>(mode);
  return index < kProfilingModeNames.size() ? kProfilingModeNames[index] : "?";
}

// The mode named `text` exactly, if any.
constexpr std::optional<ProfilingMode> parse_profiling_mode(std::string_view text) {
  for (std::size_t i = 0; i < kProfilingModeNames.size(); ++i) {
    if (kProfilingModeNames[i] == text) return static_cast<ProfilingMode>(i);
  }
  return std::nullopt;
}

}  // namespace dormant
