// Writes each snapshot to -o DIR: profile_<UTC time, ms>.col, its flamegraph .svg, and the links
// last_profile.col and last_flamegraph.svg; with --rotating-output only the last one is kept.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "profile/stack_table.h"

namespace dormant::agent {

struct WrittenProfile {
  std::filesystem::path collapsed;
  std::filesystem::path flamegraph;  // empty without --flamegraph
};

class LocalOutput {
 public:
  LocalOutput(std::filesystem::path directory, bool rotating, bool flamegraph)
      : directory_(std::move(directory)), rotating_(rotating), flamegraph_(flamegraph) {}

  Result<WrittenProfile> write(const profile::StackTable& stacks, const nlohmann::json& header,
                               std::chrono::system_clock::time_point end, const std::string& title);

 private:
  std::filesystem::path directory_;
  bool rotating_;
  bool flamegraph_;
  WrittenProfile previous_;
};

}  // namespace dormant::agent
