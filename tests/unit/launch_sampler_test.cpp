#include "cupti_lib/src/launch_sampler.h"

#include <array>
#include <cstdint>

#include <gtest/gtest.h>

namespace dormant::cupti {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// Launches `count` of them `apart_ns` apart, cycling through `sites` launch sites; what each
// site had taken.
std::array<uint64_t, 3> launch(LaunchSampler& sampler, uint64_t count, uint64_t apart_ns,
                               size_t sites = 1, uint64_t start_ns = kSecond) {
  std::array<uint64_t, 3> taken{};
  for (uint64_t i = 0; i < count; ++i) {
    if (sampler.take(start_ns + i * apart_ns)) ++taken[i % sites];
  }
  return taken;
}

TEST(LaunchSamplerTest, AThreadUnderTheRateHasEveryLaunchTaken) {
  LaunchSampler sampler(200, 1);
  EXPECT_EQ(launch(sampler, 1000, kSecond / 100)[0], 1000u);  // 100 a second for 10 s
}

TEST(LaunchSamplerTest, AThreadOverTheRateIsBroughtBackToIt) {
  LaunchSampler sampler(20'000, 1);
  uint64_t taken = launch(sampler, 2'000'000, 1000)[0];  // a million a second for 2 s
  EXPECT_NEAR(static_cast<double>(taken), 40'000, 40'000 * 0.1);
}

TEST(LaunchSamplerTest, NoLaunchSiteOfALoopIsFavoured) {
  LaunchSampler sampler(20'000, 7);
  auto taken = launch(sampler, 3'000'000, 1000, 3);
  uint64_t all = taken[0] + taken[1] + taken[2];
  for (uint64_t site : taken) EXPECT_NEAR(static_cast<double>(site) / all, 1.0 / 3, 0.02);
}

TEST(LaunchSamplerTest, ABurstAfterQuietIsTakenUpToAWindowsWorth) {
  LaunchSampler sampler(20'000, 3);
  launch(sampler, 100, kSecond / 100);  // quiet: 100 a second
  // 100,000 launches in 10 ms: past the first window's worth (2,000), at the rate's share.
  uint64_t taken = launch(sampler, 100'000, 100, 1, 3 * kSecond)[0];
  EXPECT_LT(taken, 2'000u + 2'000u);
  EXPECT_GE(taken, 2'000u);
}

TEST(LaunchSamplerTest, RateZeroTakesEveryLaunch) {
  LaunchSampler sampler(0, 1);
  EXPECT_EQ(launch(sampler, 100'000, 10)[0], 100'000u);
}

}  // namespace
}  // namespace dormant::cupti
