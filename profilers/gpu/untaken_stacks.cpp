#include "profilers/gpu/untaken_stacks.h"

namespace dormant::profilers::gpu {

void UntakenStacks::taken(const WorkGroup& group, const std::string& key, uint64_t ns) {
  taken_[group][key] += ns;
}

void UntakenStacks::untaken(const WorkGroup& group, std::string alone, uint64_t ns) {
  auto [entry, added] = untaken_.try_emplace(group);
  if (added) entry->second.alone = std::move(alone);
  entry->second.ns += ns;
}

std::vector<std::pair<std::string, uint64_t>> UntakenStacks::share_out() {
  std::vector<std::pair<std::string, uint64_t>> shared;
  for (auto& [group, untaken] : untaken_) {
    auto stacks = taken_.find(group);
    uint64_t total = 0;
    if (stacks != taken_.end()) {
      for (const auto& [key, ns] : stacks->second) total += ns;
    }
    if (total == 0) {
      shared.emplace_back(std::move(untaken.alone), untaken.ns);
      continue;
    }
    uint64_t given = 0;
    size_t left = stacks->second.size();
    for (const auto& [key, ns] : stacks->second) {
      // The last stack takes what rounding left, so that the group's time is whole.
      uint64_t share =
          --left == 0 ? untaken.ns - given
                      : static_cast<uint64_t>(static_cast<double>(untaken.ns) *
                                              static_cast<double>(ns) / static_cast<double>(total));
      given += share;
      shared.emplace_back(key, share);
    }
  }
  taken_.clear();
  untaken_.clear();
  return shared;
}

}  // namespace dormant::profilers::gpu
