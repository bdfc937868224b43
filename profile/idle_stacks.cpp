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

bool is_idle_process(std::string_view comm) {
  return comm == "swapper" || comm.starts_with("swapper/");
}

}  // namespace

bool is_idle_stack(const StackTable& table, const StackView& stack) {
  if (is_idle_process(stack.comm)) return true;
  return std::any_of(stack.frame_ids.begin(), stack.frame_ids.end(),
                     [&](StringId id) { return is_idle_function(table.string(id)); });
}

bool is_idle_stack(std::string_view comm, std::span<const std::string_view> frames) {
  return is_idle_process(comm) || std::any_of(frames.begin(), frames.end(), is_idle_function);
}

}  // namespace dormant::profile
