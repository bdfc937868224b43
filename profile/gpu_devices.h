// A profile's GPU devices, each apart: the agent's figures for each (its header's
// gpu.gpu_devices: kernel, copy, busy and idle time) beside the samples of the stacks rooted at
// its `[GPU n]` frame, and those stacks alone. A device's time is never added to another's.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile/collapsed.h"
#include "profile/stack_table.h"

namespace dormant::profile {

inline constexpr size_t kMaxGpuDevices = 64;

// "[GPU 3]" → 3; nullopt for any other frame.
std::optional<uint32_t> gpu_device_of_frame(std::string_view frame);
// The device of a stack whose root frame is a GPU's; nullopt for a CPU's stack.
std::optional<uint32_t> gpu_device_of_stack(const StackTable& stacks, const StackView& stack);

// [{"device": n, "samples": s, "kernel_ns": …, "copy_ns": …, "busy_ns": …, "idle_ns": …,
// "wall_ns": …}, …] by device, at most kMaxGpuDevices of them: the header's figures where they
// are non-negative integers (an uploaded header is anyone's), left out where they are not.
nlohmann::json gpu_devices(const CollapsedProfile& profile);

// The stacks of `stacks` whose root frame is device `device`'s.
StackTable stacks_of_gpu_device(const StackTable& stacks, uint32_t device);

}  // namespace dormant::profile
