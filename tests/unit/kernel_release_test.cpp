#include "tests/support/kernel_release.h"

#include <gtest/gtest.h>

namespace dormant {
namespace {

TEST(KernelRelease, TakesMajorAndMinorFromADistributionsRelease) {
  EXPECT_EQ(parse_kernel_release("6.1.0-18-amd64"), (KernelVersion{6, 1}));
  EXPECT_EQ(parse_kernel_release("5.15.0-91-generic"), (KernelVersion{5, 15}));
  EXPECT_EQ(parse_kernel_release("4.18.0-513.el8.x86_64"), (KernelVersion{4, 18}));
  EXPECT_EQ(parse_kernel_release("6.18"), (KernelVersion{6, 18}));
}

TEST(KernelRelease, OrdersVersionsByMajorThenMinor) {
  EXPECT_LT((KernelVersion{5, 19}), (KernelVersion{6, 1}));
  EXPECT_LT((KernelVersion{6, 0}), (KernelVersion{6, 1}));
  EXPECT_GE((KernelVersion{6, 10}), (KernelVersion{6, 9}));
}

TEST(KernelRelease, AnythingElseIsUnknownNotZero) {
  for (const char* release : {"", "6", "6.", "6-rc1", "x.1", ".1", "-6.1", "6.x"}) {
    EXPECT_EQ(parse_kernel_release(release), std::nullopt) << release;
  }
}

TEST(KernelRelease, ThisHostsKernelIsKnown) {
  auto running = running_kernel_version();
  ASSERT_TRUE(running.has_value());
  EXPECT_GE(running->major, 3);
}

}  // namespace
}  // namespace dormant
