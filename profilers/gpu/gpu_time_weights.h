// GPU time as samples, so that it sits beside CPU samples in one flamegraph: `ns × Hz / 1e9`. A
// stack's fraction of a sample is carried to its next snapshot, and each snapshot rounds its
// stacks so that their total is its total time (carries included) rounded: a microsecond kernel
// launched often adds up, and the profile's GPU samples are its GPU time within one sample.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dormant::profilers::gpu {

class GpuTimeWeights {
 public:
  explicit GpuTimeWeights(int frequency_hz, size_t max_carried = 65536)
      : frequency_hz_(frequency_hz), max_carried_(max_carried) {}

  void add(const std::string& stack, uint64_t duration_ns);
  // Each stack added to since the previous call with its samples (0 for one whose time, with its
  // carry, rounded to none).
  std::vector<std::pair<std::string, uint64_t>> take();

 private:
  int frequency_hz_;
  size_t max_carried_;
  std::unordered_map<std::string, uint64_t> added_ns_;
  std::unordered_map<std::string, double> carried_;  // samples owed (+) or given ahead (-)
};

}  // namespace dormant::profilers::gpu
