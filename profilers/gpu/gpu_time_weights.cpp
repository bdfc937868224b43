#include "profilers/gpu/gpu_time_weights.h"

#include <algorithm>
#include <cmath>

namespace dormant::profilers::gpu {

void GpuTimeWeights::add(const std::string& stack, uint64_t duration_ns) {
  added_ns_[stack] += duration_ns;
}

std::vector<std::pair<std::string, uint64_t>> GpuTimeWeights::take() {
  struct Share {
    std::string stack;
    double exact;
    uint64_t given;
  };
  std::vector<Share> shares;
  shares.reserve(added_ns_.size());
  double total = 0;
  uint64_t given = 0;
  for (auto& [stack, ns] : added_ns_) {
    double exact = static_cast<double>(ns) * frequency_hz_ / 1e9;
    if (auto carry = carried_.find(stack); carry != carried_.end()) exact += carry->second;
    auto floor = static_cast<uint64_t>(std::max(0.0, std::floor(exact)));
    shares.push_back({stack, exact, floor});
    total += exact;
    given += floor;
  }
  added_ns_.clear();
  // The stacks closest to their next sample get the samples the floors left out.
  auto wanted = static_cast<uint64_t>(std::max<long long>(0, std::llround(total)));
  std::sort(shares.begin(), shares.end(), [](const Share& a, const Share& b) {
    return a.exact - std::floor(a.exact) > b.exact - std::floor(b.exact);
  });
  for (size_t i = 0; given < wanted && i < shares.size(); ++i, ++given) ++shares[i].given;
  if (carried_.size() + shares.size() > max_carried_) carried_.clear();
  std::vector<std::pair<std::string, uint64_t>> samples;
  samples.reserve(shares.size());
  for (Share& share : shares) {
    carried_[share.stack] = share.exact - static_cast<double>(share.given);
    samples.emplace_back(std::move(share.stack), share.given);
  }
  return samples;
}

}  // namespace dormant::profilers::gpu
