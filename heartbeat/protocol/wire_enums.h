// The protocol's enumerations and the names they have on the wire.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "common/profiling_mode.h"

namespace dormant::heartbeat {

enum class HostStatus { kActive, kIdle, kError, kOffline };
enum class CommandType { kStart, kStop };
using ProfilingMode = ::dormant::ProfilingMode;  // shared with the agent's flags and the server
enum class StopLevel { kProcess, kHost };
enum class TargetScope { kHost, kService, kNamespace, kWorkload, kPod, kContainer, kProcess };
enum class CompletionStatus { kCompleted, kFailed };
// profiler_configs.perf: how freely perf may run (guard-rail presets), or not at all.
enum class PerfSetting { kEnabledRestricted, kEnabledAggressive, kDisabled };
enum class EbpfSetting { kEnabled, kDisabled };
// profiler_configs.gpu: GPU work beside CPU samples, instead of them, or none.
enum class GpuSetting { kMerge, kGpuOnly, kCpuOnly, kDisabled };

// WireNames<E>::kNames holds E's wire names in declaration order.
template <typename Enum>
struct WireNames;

template <>
struct WireNames<HostStatus> {
  static constexpr std::array<std::string_view, 4> kNames = {"active", "idle", "error", "offline"};
};
template <>
struct WireNames<CommandType> {
  static constexpr std::array<std::string_view, 2> kNames = {"start", "stop"};
};
template <>
struct WireNames<ProfilingMode> {
  static constexpr std::array<std::string_view, 3> kNames = kProfilingModeNames;
};
template <>
struct WireNames<StopLevel> {
  static constexpr std::array<std::string_view, 2> kNames = {"process", "host"};
};
template <>
struct WireNames<TargetScope> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "host", "service", "namespace", "workload", "pod", "container", "process"};
};
template <>
struct WireNames<CompletionStatus> {
  static constexpr std::array<std::string_view, 2> kNames = {"completed", "failed"};
};
template <>
struct WireNames<PerfSetting> {
  static constexpr std::array<std::string_view, 3> kNames = {"enabled_restricted",
                                                             "enabled_aggressive", "disabled"};
};
template <>
struct WireNames<EbpfSetting> {
  static constexpr std::array<std::string_view, 2> kNames = {"enabled", "disabled"};
};

template <>
struct WireNames<GpuSetting> {
  static constexpr std::array<std::string_view, 4> kNames = {"merge", "gpu-only", "cpu-only",
                                                             "disabled"};
};

template <typename Enum>
concept WireEnum = requires {
  WireNames<Enum>::kNames;
};

template <WireEnum Enum>
constexpr std::string_view to_string(Enum value) {
  return WireNames<Enum>::kNames[static_cast<std::size_t>(value)];
}

// The value named `name` exactly (wire names are case-sensitive), if any.
template <WireEnum Enum>
constexpr std::optional<Enum> enum_from_string(std::string_view name) {
  const auto& names = WireNames<Enum>::kNames;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace dormant::heartbeat
