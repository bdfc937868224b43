// Which profilers a session runs and how they walk stacks: the same choices in the agent's flags,
// in a command from the server and in the settings its profiler module is given, defined once.
#pragma once

#include <array>
#include <string_view>

#include "common/named_enums.h"

namespace dormant {

// What samples the CPU: eBPF where it loads and perf otherwise, one of them only, or none.
enum class CpuProfilers { kNone, kEbpf, kPerf, kEbpfElsePerf };

// How perf walks stacks.
enum class CallGraph {
  kFramePointer,  // -g
  kDwarf,         // --call-graph dwarf,SIZE
  kSmart,         // both; per process, the deeper stacks win
};

// GPU work beside the CPU samples (merge), instead of them (gpu-only), or not at all (cpu-only:
// in `gpu --` the program also runs without libdormant_cupti.so; disabled). The flag's words and
// a command's profiler_configs.gpu.
enum class GpuMode { kMerge, kGpuOnly, kCpuOnly, kDisabled };

template <>
struct EnumNames<GpuMode> {
  static constexpr std::array<std::string_view, 4> kNames = {"merge", "gpu-only", "cpu-only",
                                                             "disabled"};
};

}  // namespace dormant
