// A snapshot as the module renders it: the collapsed file with its header, the flamegraph, and
// the profile cut to fit a destination.
#include <gtest/gtest.h>

#include "module/stack_snapshot.h"
#include "profile/collapsed.h"

namespace dormant::module {
namespace {

profile::StackTable weighted_stacks(int count) {
  profile::StackTable stacks;
  for (int i = 0; i < count; ++i) {
    std::string leaf = "leaf_" + std::to_string(i);
    std::string_view frames[] = {"main", leaf};
    stacks.add(i % 2 ? "web" : "", "app", frames, static_cast<uint64_t>(i + 1));
  }
  return stacks;
}

TEST(StackSnapshot, TheHeaderCarriesTheSessionsFactsAndTheSnapshotsContainers) {
  ProfileFacts facts;
  facts.host.hostname = "web-01";
  facts.agent_version = "9.9.9";
  facts.profiling_mode = "cpu";
  SnapshotTimes times{std::chrono::system_clock::now(), 12.5, 40};
  auto stacks = weighted_stacks(4);
  StackSnapshot snapshot(stacks, profile_header(facts, times, stacks));
  EXPECT_EQ(snapshot.samples(), 10u);
  auto profile = profile::read_collapsed(snapshot.collapsed());
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  EXPECT_EQ(profile->header["metadata"]["hostname"], "web-01");
  EXPECT_EQ(profile->header["metadata"]["agent_version"], "9.9.9");
  EXPECT_EQ(profile->header["metrics"]["cpu_avg"], 12.5);
  EXPECT_EQ(profile->header["containers"], nlohmann::json({"web"}));
  EXPECT_EQ(profile->stacks.total_samples(), 10u);
  std::string svg = snapshot.flamegraph_svg("Dormant: web-01", "now");
  EXPECT_NE(svg.find("Dormant: web-01"), std::string::npos);
  EXPECT_NE(svg.find("leaf_3"), std::string::npos);
}

TEST(StackSnapshot, AProfileThatFitsIsMeasuredOnceAndGoesWhole) {
  StackSnapshot snapshot(weighted_stacks(10), {{"metadata", nlohmann::json::object()}});
  int asked = 0;
  auto fitted = snapshot.collapsed_fitting([&](const std::string&) -> Result<double> {
    ++asked;
    return 2.0;
  });
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(fitted->dropped_stacks, 0u);
  EXPECT_EQ(fitted->collapsed, snapshot.collapsed());
}

TEST(StackSnapshot, AProfileTooLargeLosesItsLightestStacksUntilItFits) {
  StackSnapshot snapshot(weighted_stacks(1000), {{"metadata", nlohmann::json::object()}});
  constexpr size_t kLimit = 8000;
  auto fitted = snapshot.collapsed_fitting([&](const std::string& text) -> Result<double> {
    return static_cast<double>(kLimit) / static_cast<double>(text.size());
  });
  ASSERT_TRUE(fitted.ok()) << fitted.error().message();
  EXPECT_LE(fitted->collapsed.size(), kLimit);
  auto profile = profile::read_collapsed(fitted->collapsed);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->stacks.distinct_stacks() + fitted->dropped_stacks, 1000u);
  EXPECT_EQ(profile->header["truncated"]["dropped_stacks"], fitted->dropped_stacks);
  uint64_t lightest_kept = UINT64_MAX;
  profile->stacks.for_each([&](const profile::StackView& stack) {
    lightest_kept = std::min(lightest_kept, stack.count);
  });
  EXPECT_EQ(lightest_kept, fitted->dropped_stacks + 1) << "not the lightest were dropped";
}

TEST(StackSnapshot, AMeasureThatFailsFailsTheFitAndOneThatNeverFitsGivesUp) {
  StackSnapshot snapshot(weighted_stacks(50), {{"metadata", nlohmann::json::object()}});
  auto failed = snapshot.collapsed_fitting(
      [](const std::string&) -> Result<double> { return Error::invalid_argument("no gzip"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "no gzip");
  int asked = 0;
  auto never = snapshot.collapsed_fitting([&](const std::string&) -> Result<double> {
    ++asked;
    return 0.99;
  });
  ASSERT_FALSE(never.ok());
  EXPECT_LE(asked, 9) << "a bounded number of tries";
}

}  // namespace
}  // namespace dormant::module
