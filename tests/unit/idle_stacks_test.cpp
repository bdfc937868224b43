#include "profile/idle_stacks.h"

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace dormant::profile {
namespace {

using Frames = std::vector<std::string_view>;

bool idle(std::string_view comm, const Frames& frames) {
  StackTable table;
  table.add("", comm, frames, 1);
  bool result = false;
  table.for_each([&](const StackView& stack) { result = is_idle_stack(table, stack); });
  return result;
}

TEST(IdleStacks, TheIdleTaskAndTheKernelsIdleLoopAreIdle) {
  EXPECT_TRUE(idle("swapper", {"secondary_startup_64_[k]", "cpu_startup_entry_[k]"}));
  EXPECT_TRUE(idle("swapper/3", {}));
  EXPECT_TRUE(idle("kworker/0:1", {"do_idle_[k]", "cpuidle_enter_state_[k]", "intel_idle_[k]"}));
}

TEST(IdleStacks, WorkIsNotIdleNorAProgramsFunctionNamedLikeTheKernels) {
  EXPECT_FALSE(idle("nginx", {"main", "ngx_process_events", "epoll_wait_[k]"}));
  EXPECT_FALSE(idle("game", {"main", "do_idle"})) << "a user-space function, not the kernel's";
  EXPECT_FALSE(idle("swappery", {"main"}));
}

}  // namespace
}  // namespace dormant::profile
