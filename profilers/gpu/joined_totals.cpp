#include "profilers/gpu/joined_totals.h"

#include <functional>

namespace dormant::profilers::gpu {

size_t JoinedTotals::KeyHash::operator()(const Key& key) const {
  uint64_t a = (uint64_t(uint32_t(key.pid)) << 32) | uint32_t(key.tid);
  uint64_t b = (uint64_t(uint32_t(key.cbid)) << 33) ^ (uint64_t{key.stack} << 1) ^ key.launched;
  uint64_t c = (uint64_t{key.what} << 32) | key.where;
  constexpr uint64_t kMix = 0x9e3779b97f4a7c15ull;
  return std::hash<uint64_t>()(((a * kMix) ^ b) * kMix ^ c);
}

void JoinedTotals::add(const JoinedWork& joined) {
  Key key{joined.work.pid, joined.tid,       joined.launched,  joined.cbid,
          joined.stack,    joined.work.what, joined.work.where};
  auto found = sums_.find(key);
  if (found == sums_.end()) {
    size_t& held = keys_by_pid_[key.pid];
    if (sums_.size() >= max_keys_ || held >= max_keys_ / 4) {
      past_bound_ns_[key.pid] += joined.work.duration_ns;
      ++records_past_bound_;
      return;
    }
    ++held;
    found = sums_.emplace(key, 0).first;
  }
  found->second += joined.work.duration_ns;
}

std::vector<JoinedWork> JoinedTotals::take() {
  std::vector<JoinedWork> summed;
  summed.reserve(sums_.size());
  for (const auto& [key, ns] : sums_) {
    JoinedWork one;
    one.work = GpuWork{key.pid, 0, key.what, key.where, ns};
    one.launched = key.launched;
    one.cbid = key.cbid;
    one.stack = key.stack;
    one.tid = key.tid;
    summed.push_back(one);
  }
  sums_.clear();
  keys_by_pid_.clear();
  return summed;
}

std::vector<std::pair<int, uint64_t>> JoinedTotals::take_past_bound() {
  std::vector<std::pair<int, uint64_t>> past(past_bound_ns_.begin(), past_bound_ns_.end());
  past_bound_ns_.clear();
  return past;
}

}  // namespace dormant::profilers::gpu
