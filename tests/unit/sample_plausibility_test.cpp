#include "profile/sample_plausibility.h"

#include <cstdint>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace dormant::profile {
namespace {

using nlohmann::json;

// A profile of `cpu` CPU samples and `gpu` on GPU 1, its header's frequency and mode as given.
CollapsedProfile profile_of(uint64_t cpu, uint64_t gpu, json frequency, std::string mode = "cpu",
                            json more_arguments = json::object()) {
  CollapsedProfile profile;
  json arguments = more_arguments;
  if (!frequency.is_null()) arguments["frequency"] = frequency;
  profile.header = {
      {"metadata", {{"processors", 2}, {"profiling_mode", mode}, {"run_arguments", arguments}}}};
  std::string_view cpu_stack[] = {"main", "work"};
  std::string_view gpu_stack[] = {"[GPU 1]", "main", "cudaLaunchKernel", "[GPU] gemm"};
  if (cpu > 0) profile.stacks.add("", "app", cpu_stack, cpu);
  if (gpu > 0) profile.stacks.add("", "app", gpu_stack, gpu);
  return profile;
}

TEST(SamplePlausibility, AnHonestSessionPasses) {
  // 60 s at 11 Hz on 2 processors: at most 1,320 ticks, 1,476 with the slack.
  EXPECT_TRUE(check_plausible_samples(profile_of(1'320, 1'300, 11), 60).ok());
  EXPECT_TRUE(check_plausible_samples(profile_of(1'400, 0, "11"), 60).ok()) << "text frequency";
}

TEST(SamplePlausibility, MoreSamplesThanTheSessionCouldTakeAreRefusedSayingWhy) {
  auto refused = check_plausible_samples(profile_of(1'000'000'000, 0, 11), 60);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            "profile: 1000000000 samples of CPU in 60 s at 11 Hz on 2 processors, more than the "
            "1477 such a session could take (duration times frequency times processors, and 10%)");
  EXPECT_FALSE(check_plausible_samples(profile_of(1'500, 0, "11"), 60).ok());
  auto gpu = check_plausible_samples(profile_of(10, 1'000'000, 11), 60);
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.error().message().find("samples of GPU 1"), std::string::npos);
  // Without a frequency (or one that is not a number), the highest the agent allows is assumed.
  for (json frequency : {json(), json("fast"), json(-5), json::array()}) {
    EXPECT_TRUE(check_plausible_samples(profile_of(100'000, 0, frequency), 60).ok());
    EXPECT_FALSE(check_plausible_samples(profile_of(1'000'000'000, 0, frequency), 60).ok());
  }
}

// Counts whose sum wraps past 2^64 (2^63 twice is 0) once passed as a handful of samples.
TEST(SamplePlausibility, CountsThatWouldWrapAreSummedToTheMostAndRefused) {
  CollapsedProfile profile = profile_of(0, 0, 11);
  std::string_view first[] = {"main", "a"};
  std::string_view second[] = {"main", "b"};
  profile.stacks.add("", "app", first, uint64_t{1} << 63);
  profile.stacks.add("", "app", second, uint64_t{1} << 63);
  SampleCounts counts = count_samples(profile);
  EXPECT_EQ(counts.cpu_busy, UINT64_MAX);
  EXPECT_EQ(counts.total(), UINT64_MAX);
  EXPECT_FALSE(check_plausible_samples(profile, 60).ok());
}

TEST(SamplePlausibility, CountsTellBusyIdleAndEachGpuApart) {
  CollapsedProfile profile = profile_of(5, 7, 11);
  std::string_view idle[] = {"secondary_startup_64_[k]", "do_idle_[k]"};
  profile.stacks.add("", "swapper/0", idle, 90);
  SampleCounts counts = count_samples(profile);
  EXPECT_EQ(counts.cpu_busy, 5u);
  EXPECT_EQ(counts.cpu_idle, 90u);
  EXPECT_EQ(counts.gpu, (std::map<uint32_t, uint64_t>{{1, 7}}));
  EXPECT_EQ(counts.cpu(), 95u);
  EXPECT_EQ(counts.total(), 102u);
}

TEST(SamplePlausibility, SamplesThatAreNotTicksPass) {
  EXPECT_TRUE(check_plausible_samples(profile_of(1'000'000'000, 0, 11, "allocation"), 60).ok());
  EXPECT_TRUE(
      check_plausible_samples(
          profile_of(1'000'000'000, 0, 11, "cpu", {{"java_async_profiler_mode", "wall"}}), 60)
          .ok());
}

}  // namespace
}  // namespace dormant::profile
