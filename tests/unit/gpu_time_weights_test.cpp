#include "profilers/gpu/gpu_time_weights.h"

#include <map>
#include <numeric>

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

uint64_t total(const std::vector<std::pair<std::string, uint64_t>>& samples) {
  uint64_t sum = 0;
  for (const auto& [stack, count] : samples) sum += count;
  return sum;
}

TEST(GpuTimeWeights, TimeBecomesSamplesAtTheFrequency) {
  GpuTimeWeights weights(100);
  weights.add("a", 1'000'000'000);  // 1 s at 100 Hz
  weights.add("b", 250'000'000);
  auto samples = weights.take();
  std::map<std::string, uint64_t> by_stack(samples.begin(), samples.end());
  EXPECT_EQ(by_stack["a"], 100u);
  EXPECT_EQ(by_stack["b"], 25u);
}

TEST(GpuTimeWeights, MicrosecondKernelsAddUpInsteadOfRoundingToNothing) {
  GpuTimeWeights weights(11);
  // 100,000 kernels of 3 µs: 0.3 s, 3.3 samples; each alone is 0.000033 of one.
  for (int i = 0; i < 100'000; ++i) weights.add("tiny", 3'000);
  EXPECT_EQ(total(weights.take()), 3u);
  // The 0.3 left over is carried: seven more such snapshots make 23.1 in all.
  uint64_t sum = 3;
  for (int snapshot = 0; snapshot < 6; ++snapshot) {
    for (int i = 0; i < 100'000; ++i) weights.add("tiny", 3'000);
    sum += total(weights.take());
  }
  EXPECT_NEAR(static_cast<double>(sum), 7 * 3.3, 1.0);
}

TEST(GpuTimeWeights, ASnapshotsTotalIsItsTimeWithinOneSample) {
  GpuTimeWeights weights(99);
  uint64_t ns = 0;
  // Many stacks, each far below one sample: rounding each would give none at all.
  for (int stack = 0; stack < 1000; ++stack) {
    uint64_t each = 1'000'000 + static_cast<uint64_t>(stack) * 1'000;
    weights.add("stack " + std::to_string(stack), each);
    ns += each;
  }
  double exact = static_cast<double>(ns) * 99 / 1e9;
  EXPECT_NEAR(static_cast<double>(total(weights.take())), exact, 1.0);
}

TEST(GpuTimeWeights, StacksWithNothingNewAreNotReported) {
  GpuTimeWeights weights(100);
  weights.add("a", 15'000'000);
  EXPECT_EQ(weights.take().size(), 1u);
  EXPECT_TRUE(weights.take().empty());
}

}  // namespace
}  // namespace dormant::profilers::gpu
