// A snapshot's stack table with its profile header, rendered as the module's Snapshot.
#pragma once

#include <nlohmann/json.hpp>

#include "module/api/profiler_module.h"
#include "profile/stack_table.h"

namespace dormant::module {

class StackSnapshot final : public Snapshot {
 public:
  StackSnapshot(profile::StackTable stacks, nlohmann::json header)
      : stacks_(std::move(stacks)), header_(std::move(header)) {}

  uint64_t samples() const override { return stacks_.total_samples(); }
  std::string collapsed() const override;
  std::string flamegraph_svg(const std::string& title, const std::string& subtitle) const override;
  Result<Fitted> collapsed_fitting(const Room& room) const override;

 private:
  profile::StackTable stacks_;
  nlohmann::json header_;
};

// The header of a collapsed profile of this session taken at `times`.
nlohmann::json profile_header(const ProfileFacts& facts, const SnapshotTimes& times,
                              const profile::StackTable& stacks);

}  // namespace dormant::module
