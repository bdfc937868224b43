#include "profilers/gpu/joined_totals.h"

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

JoinedWork work(int pid, uint32_t stack, uint64_t ns, uint32_t what = 1) {
  JoinedWork joined;
  joined.work = GpuWork{pid, 99, what, 2, ns};
  joined.launched = true;
  joined.cbid = 211;
  joined.stack = stack;
  joined.tid = pid;
  return joined;
}

TEST(JoinedTotalsTest, WorkOfOneStackIsSummedIntoOne) {
  JoinedTotals totals;
  for (int i = 0; i < 100'000; ++i) totals.add(work(7, i % 3, 10));
  totals.add(work(7, 0, 10, /*what=*/2));  // another kernel of the same stack
  auto summed = totals.take();
  ASSERT_EQ(summed.size(), 4u);
  uint64_t all = 0;
  for (const JoinedWork& one : summed) {
    all += one.work.duration_ns;
    EXPECT_EQ(one.work.pid, 7);
    EXPECT_EQ(one.work.where, 2u);
    EXPECT_TRUE(one.launched);
  }
  EXPECT_EQ(all, 1'000'010u);
  EXPECT_TRUE(totals.take().empty());
}

TEST(JoinedTotalsTest, AProcessPastItsShareOfStacksKeepsItsTimeUnderItself) {
  JoinedTotals totals(40);  // a process may hold 10
  for (uint32_t stack = 0; stack < 1000; ++stack) totals.add(work(6, stack, 1));  // a flood
  for (uint32_t stack = 0; stack < 5; ++stack) totals.add(work(7, stack, 100));   // honest
  auto summed = totals.take();
  size_t honest = 0;
  for (const JoinedWork& one : summed) honest += one.work.pid == 7;
  EXPECT_EQ(honest, 5u);
  EXPECT_EQ(summed.size(), 15u);
  auto past = totals.take_past_bound();
  ASSERT_EQ(past.size(), 1u);
  EXPECT_EQ(past[0], std::make_pair(6, uint64_t{990}));
  EXPECT_EQ(totals.records_past_bound(), 990u);
  totals.add(work(6, 1, 1));  // a new snapshot: room again
  EXPECT_EQ(totals.take().size(), 1u);
}

}  // namespace
}  // namespace dormant::profilers::gpu
