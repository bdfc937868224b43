// What profiling requests and commands are made of: the same words on the wire (the agent's and
// Studio's messages) and in the control server's database, defined once for both.
#pragma once

#include <array>
#include <string_view>

#include "common/named_enums.h"

namespace dormant {

enum class HostStatus { kActive, kIdle, kError, kOffline };
enum class CommandType { kStart, kStop };
enum class StopLevel { kProcess, kHost };
// What a request's selectors pick (Performance Studio's target_scope).
enum class TargetScope { kHost, kService, kNamespace, kWorkload, kPod, kContainer, kProcess };

template <>
struct EnumNames<HostStatus> {
  static constexpr std::array<std::string_view, 4> kNames = {"active", "idle", "error", "offline"};
};
template <>
struct EnumNames<CommandType> {
  static constexpr std::array<std::string_view, 2> kNames = {"start", "stop"};
};
template <>
struct EnumNames<StopLevel> {
  static constexpr std::array<std::string_view, 2> kNames = {"process", "host"};
};
template <>
struct EnumNames<TargetScope> {
  static constexpr std::array<std::string_view, 7> kNames = {
      "host", "service", "namespace", "workload", "pod", "container", "process"};
};

}  // namespace dormant
