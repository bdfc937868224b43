// What a session profiles: gProfiler's --mode, the same word in the agent's flags, on the wire
// and in the server's database.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "common/named_enums.h"

namespace dormant {

enum class ProfilingMode { kCpu, kAllocation, kNone };

// The names in declaration order: "cpu", "allocation", "none".
inline constexpr std::array<std::string_view, 3> kProfilingModeNames = {"cpu", "allocation",
                                                                        "none"};

template <>
struct EnumNames<ProfilingMode> {
  static constexpr std::array<std::string_view, 3> kNames = kProfilingModeNames;
};

// The mode named `text` exactly, if any.
constexpr std::optional<ProfilingMode> parse_profiling_mode(std::string_view text) {
  return enum_from_string<ProfilingMode>(text);
}

}  // namespace dormant
