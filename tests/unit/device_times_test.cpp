#include "profilers/gpu/device_times.h"

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

TEST(DeviceTimesTest, BusyTimeIsTheUnionOfTheWorkAndKernelTimeItsSum) {
  DeviceTimes times;
  times.add(0, true, 100, 200);
  times.add(0, true, 150, 250);  // overlaps the first: another stream
  times.add(0, false, 400, 450);
  times.add(1, true, 0, 1000);
  auto totals = times.totals();
  EXPECT_EQ(totals[0].kernel_ns, 200u);
  EXPECT_EQ(totals[0].copy_ns, 50u);
  EXPECT_EQ(totals[0].busy_ns, 150u + 50u);
  EXPECT_EQ(totals[1].busy_ns, 1000u);
}

TEST(DeviceTimesTest, WorkArrivingOutOfOrderIsCountedOnce) {
  DeviceTimes times;
  times.add(0, true, 300, 400);
  times.add(0, true, 100, 200);
  EXPECT_EQ(times.totals()[0].busy_ns, 200u);
  times.add(0, true, 150, 350);  // late, over both: fills the gap between them only
  EXPECT_EQ(times.totals()[0].busy_ns, 300u);
}

TEST(DeviceTimesTest, AFloodOfDisjointPiecesHoldsABoundedNumberAndLosesNoBusyTime) {
  DeviceTimes times(64, 1024);
  for (uint64_t i = 0; i < 100'000; ++i) times.add(0, true, 10 * i, 10 * i + 5);
  EXPECT_EQ(times.totals()[0].busy_ns, 500'000u);
  EXPECT_EQ(times.totals()[0].kernel_ns, 500'000u);
}

TEST(DeviceTimesTest, DevicesPastTheBoundAreCountedNotKept) {
  DeviceTimes times(2);
  for (uint32_t device = 0; device < 10; ++device) times.add(device * 1000, true, 0, 10);
  EXPECT_EQ(times.totals().size(), 2u);
  EXPECT_EQ(times.devices_past_bound(), 8u);
}

}  // namespace
}  // namespace dormant::profilers::gpu
