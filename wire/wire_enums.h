// The protocol's enumerations and the names they have on the wire.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "common/command_enums.h"
#include "common/named_enums.h"
#include "common/profiler_choices.h"
#include "common/profiling_mode.h"

namespace dormant::wire {

// Shared with the server's database (common/command_enums.h) and the agent's flags.
using ::dormant::CommandType;
using ::dormant::HostStatus;
using ::dormant::StopLevel;
using ::dormant::TargetScope;
using ProfilingMode = ::dormant::ProfilingMode;
using ::dormant::GpuMode;  // profiler_configs.gpu
enum class CompletionStatus { kCompleted, kFailed };
// profiler_configs.perf: how freely perf may run (guard-rail presets), or not at all.
enum class PerfSetting { kEnabledRestricted, kEnabledAggressive, kDisabled };
enum class EbpfSetting { kEnabled, kDisabled };

// The words of an enumeration on the wire (common/named_enums.h).
template <typename Enum>
concept WireEnum = NamedEnum<Enum>;
using ::dormant::enum_from_string;
using ::dormant::to_string;

}  // namespace dormant::wire

namespace dormant {

template <>
struct EnumNames<wire::CompletionStatus> {
  static constexpr std::array<std::string_view, 2> kNames = {"completed", "failed"};
};
template <>
struct EnumNames<wire::PerfSetting> {
  static constexpr std::array<std::string_view, 3> kNames = {"enabled_restricted",
                                                             "enabled_aggressive", "disabled"};
};
template <>
struct EnumNames<wire::EbpfSetting> {
  static constexpr std::array<std::string_view, 2> kNames = {"enabled", "disabled"};
};

}  // namespace dormant
