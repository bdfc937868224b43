#include "profilers/gpu/launch_join.h"

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

using namespace std::chrono_literals;

const JoinClock::time_point kStart{};

Launch launch(uint32_t id, uint32_t stack, bool graph = false, int pid = 7) {
  return Launch{pid, pid, id, 0, 211, stack, graph};
}

GpuWork work(uint32_t id, uint64_t ns, int pid = 7) { return GpuWork{pid, id, 1, 0, ns}; }

bool never_gone(int) { return false; }

TEST(LaunchJoin, JoinsWhicheverSideComesFirst) {
  LaunchJoin join;
  join.add_launch(launch(1, 10), kStart);
  join.add_work(work(1, 100), kStart);
  join.add_work(work(2, 200), kStart);  // before its launch
  join.add_launch(launch(2, 20), kStart);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_TRUE(joined[0].launched);
  EXPECT_EQ(joined[0].stack, 10u);
  EXPECT_EQ(joined[1].stack, 20u);
  EXPECT_EQ(joined[1].work.duration_ns, 200u);
  EXPECT_EQ(join.pending_launches(), 0u);
  EXPECT_EQ(join.pending_work(), 0u);
  EXPECT_EQ(join.counts().joined, 2u);
}

TEST(LaunchJoin, KeysOnTheProcessAsWellAsTheId) {
  LaunchJoin join;
  join.add_launch(launch(1, 10, false, 100), kStart);
  join.add_work(work(1, 5, 200), kStart);
  EXPECT_TRUE(join.take_joined().empty());
  join.add_launch(launch(1, 20, false, 200), kStart);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].stack, 20u);
}

TEST(LaunchJoin, EveryKernelOfAGraphLaunchGetsItsStack) {
  LaunchJoin join;
  join.add_work(work(5, 1), kStart);  // one arrives before the graph's launch event
  join.add_launch(launch(5, 50, /*graph=*/true), kStart);
  join.add_work(work(5, 2), kStart);
  join.add_work(work(5, 3), kStart);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 3u);
  for (const auto& one : joined) EXPECT_EQ(one.stack, 50u);
  join.expire(kStart + 10s, never_gone);
  EXPECT_EQ(join.counts().unmatched_launches, 0u);  // it was joined: not unmatched when it goes
  EXPECT_EQ(join.pending_launches(), 0u);
}

TEST(LaunchJoin, AGraphLaunchIsRetiredOnceNoKernelOfItHasComeForAWhile) {
  LaunchJoin join(JoinLimits{.graph_quiet_for = 1s});
  join.add_launch(launch(5, 50, /*graph=*/true), kStart);
  join.retire_graphs(kStart + 10s);  // no kernel yet: it waits for its kernels, not retired
  EXPECT_EQ(join.pending_launches(), 1u);
  join.add_work(work(5, 1), kStart + 10s);
  join.add_work(work(5, 2), kStart + 10s + 800ms);
  join.retire_graphs(kStart + 11s + 500ms);  // 0.7 s after its latest kernel
  EXPECT_EQ(join.pending_launches(), 1u);
  join.retire_graphs(kStart + 11s + 800ms);
  EXPECT_EQ(join.pending_launches(), 0u);
  EXPECT_EQ(join.counts().graphs_retired, 1u);
  EXPECT_EQ(join.counts().unmatched_launches, 0u);
  EXPECT_EQ(join.take_joined().size(), 2u);
}

TEST(LaunchJoin, AGraphLaunchWithANestedIdIsRetiredUnderBoth) {
  LaunchJoin join(JoinLimits{.graph_quiet_for = 1s});
  Launch graph = launch(5, 50, /*graph=*/true);
  graph.nested_correlation_id = 6;
  join.add_work(work(6, 1), kStart);  // before the launch, under the driver call's id
  join.add_launch(graph, kStart);
  join.retire_graphs(kStart + 1s);
  EXPECT_EQ(join.pending_launches(), 0u);
  join.add_work(work(5, 1), kStart + 1s);  // after it was retired: given up in time
  EXPECT_EQ(join.pending_work(), 1u);
  EXPECT_EQ(join.counts().graphs_retired, 1u);
}

// The table full, the oldest graph launch that has had kernels makes room; none is refused.
TEST(LaunchJoin, AFullTableRetiresItsOldestJoinedGraphLaunchRatherThanRefuseOne) {
  LaunchJoin join(JoinLimits{.max_launches = 3});
  for (uint32_t id = 1; id <= 70; ++id) {
    join.add_launch(launch(id, id, /*graph=*/true), kStart);
    join.add_work(work(id, 1), kStart);
  }
  EXPECT_EQ(join.counts().over_capacity, 0u);
  EXPECT_EQ(join.counts().joined, 70u);
  EXPECT_EQ(join.counts().graphs_retired, 67u);
  EXPECT_EQ(join.pending_launches(), 3u);
  join.add_work(work(70, 1), kStart);  // the newest is still there for more kernels
  EXPECT_EQ(join.counts().joined, 71u);
}

TEST(LaunchJoin, ANestedDriverIdJoinsTheSameLaunchOnce) {
  LaunchJoin join;
  Launch runtime = launch(8, 80);
  runtime.nested_correlation_id = 9;
  join.add_launch(runtime, kStart);
  join.add_work(work(9, 40), kStart);  // the kernel carries the driver call's id
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].stack, 80u);
  EXPECT_EQ(join.pending_launches(), 0u) << "both ids of the launch are done";
  join.add_work(work(8, 40), kStart);  // a second record under the other id is not joined again
  EXPECT_TRUE(join.take_joined().empty());
  EXPECT_EQ(join.pending_work(), 1u);
}

TEST(LaunchJoin, ALaunchWithANestedIdJoinedUnderItsOwnIdIsGoneUnderBoth) {
  LaunchJoin join;
  Launch runtime = launch(8, 80);
  runtime.nested_correlation_id = 9;
  join.add_launch(runtime, kStart);
  join.add_work(work(8, 40), kStart);
  ASSERT_EQ(join.take_joined().size(), 1u);
  EXPECT_EQ(join.pending_launches(), 0u);
  join.add_work(work(9, 40), kStart);
  EXPECT_TRUE(join.take_joined().empty());
}

TEST(LaunchJoin, ExpiredEntriesAreCountedAndWorkIsStillHandedOut) {
  LaunchJoin join(JoinLimits{.pending_for = 5s});
  join.add_launch(launch(1, 10), kStart);
  join.add_work(work(2, 300), kStart);
  join.expire(kStart + 4s, never_gone);
  EXPECT_TRUE(join.take_joined().empty());
  join.expire(kStart + 5s, never_gone);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_FALSE(joined[0].launched);
  EXPECT_EQ(joined[0].work.duration_ns, 300u);
  EXPECT_EQ(join.counts().unmatched_launches, 1u);
  EXPECT_EQ(join.counts().unmatched_work, 1u);
  EXPECT_EQ(join.pending_launches() + join.pending_work(), 0u);
}

TEST(LaunchJoin, AnExitedProcessIsGivenUpAtOnce) {
  LaunchJoin join;
  join.add_work(work(1, 10, 100), kStart);
  join.add_work(work(1, 10, 200), kStart);
  join.expire(kStart, [](int pid) { return pid == 100; });
  EXPECT_EQ(join.take_joined().size(), 1u);
  EXPECT_EQ(join.pending_work(), 1u);
}

TEST(LaunchJoin, CapsHoldAndWhatTheyTurnAwayIsCounted) {
  LaunchJoin join(JoinLimits{.max_launches = 2, .max_work = 2});
  for (uint32_t id = 1; id <= 3; ++id) join.add_launch(launch(id, id), kStart);
  for (uint32_t id = 11; id <= 13; ++id) join.add_work(work(id, 1), kStart);
  EXPECT_EQ(join.pending_launches(), 2u);
  EXPECT_EQ(join.pending_work(), 2u);
  EXPECT_EQ(join.counts().over_capacity, 2u);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 1u);  // the work turned away is handed out without a launch
  EXPECT_FALSE(joined[0].launched);
}

// A flood of records between two snapshots (a process firing the probe in a loop) costs at most
// max_handed_out of them in memory; the rest keep their time, without their frames.
TEST(LaunchJoin, PastTheBoundOfHandedOutWorkOnlyItsTimeIsKept) {
  LaunchJoin join(JoinLimits{.max_work = 0, .max_handed_out = 3});
  for (uint32_t id = 1; id <= 10; ++id) join.add_work(work(id, 100), kStart);
  EXPECT_EQ(join.take_joined().size(), 3u);
  EXPECT_EQ(join.take_ns_past_bound(), 700u);
  EXPECT_EQ(join.counts().past_bound, 7u);
  EXPECT_EQ(join.counts().unmatched_work, 10u);
  join.add_work(work(11, 100), kStart);  // a new snapshot: room again
  EXPECT_EQ(join.take_joined().size(), 1u);
  EXPECT_EQ(join.take_ns_past_bound(), 0u);
}

TEST(LaunchJoin, ASecondLaunchUnderAPendingIdIsADuplicate) {
  LaunchJoin join;
  join.add_launch(launch(1, 10), kStart);
  join.add_launch(launch(1, 20), kStart);
  join.add_work(work(1, 1), kStart);
  auto joined = join.take_joined();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].stack, 10u);
  EXPECT_EQ(join.counts().duplicate_launches, 1u);
}

TEST(LaunchJoin, FinishGivesUpEverything) {
  LaunchJoin join;
  join.add_launch(launch(1, 10), kStart);
  join.add_work(work(2, 1), kStart);
  join.finish();
  EXPECT_EQ(join.take_joined().size(), 1u);
  EXPECT_EQ(join.counts().unmatched_launches, 1u);
}

}  // namespace
}  // namespace dormant::profilers::gpu
