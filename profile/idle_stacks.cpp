#include "profile/idle_stacks.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace dormant::profile {
namespace {

// The kernel's idle loop and the drivers it waits in. Only kernel frames (named "..._[k]") count:
// a program may have a function of the same name.
constexpr std::array<std::string_view, 12> kIdleFunctions = {
    "do_idle",         "cpu_idle",      "cpuidle_enter",     "cpuidle_enter_state",
    "default_idle",    "arch_cpu_idle", "poll_idle",         "intel_idle",
    "acpi_idle_enter", "mwait_idle",    "cpu_startup_entry", "default_idle_call"};

bool is_idle_function(std::string_view frame) {
  if (!frame.ends_with("_[k]")) return false;
  frame.remove_suffix(4);
  return std::find(kIdleFunctions.begin(), kIdleFunctions.end(), frame) != kIdleFunctions.end();
}

}  // namespace

bool is_idle_stack(const StackTable& table, const StackView& stack) {
  if (stack.comm == "swapper" || stack.comm.starts_with("swapper/")) return true;
  return std::any_of(stack.frame_ids.begin(), stack.frame_ids.end(),
                     [&](StringId id) { return is_idle_function(table.string(id)); });
}

}  // namespace dormant::profile
