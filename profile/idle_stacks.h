// Which samples are a CPU doing nothing: the kernel's idle task (pid 0, "swapper/N") and its idle
// loop. A whole-host profile is mostly these on a quiet machine, which hides the work people look
// for, so merged flamegraphs leave them out unless asked.
#pragma once

#include <span>
#include <string_view>

#include "profile/stack_table.h"

namespace dormant::profile {

bool is_idle_stack(const StackTable& table, const StackView& stack);
// The same for a stack's process name and frames as text.
bool is_idle_stack(std::string_view comm, std::span<const std::string_view> frames);

}  // namespace dormant::profile
