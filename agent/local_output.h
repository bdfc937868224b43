// Writes each snapshot to -o DIR: profile_<UTC time, ms>.col, its flamegraph .svg, and the links
// last_profile.col and last_flamegraph.svg; with --rotating-output only the last one is kept.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/result.h"

namespace dormant::agent {

struct WrittenProfile {
  std::filesystem::path collapsed;
  std::filesystem::path flamegraph;  // empty when there was no flamegraph
};

class LocalOutput {
 public:
  LocalOutput(std::filesystem::path directory, bool rotating)
      : directory_(std::move(directory)), rotating_(rotating) {}

  // `flamegraph_svg` empty: no flamegraph is written.
  Result<WrittenProfile> write(const std::string& collapsed, const std::string& flamegraph_svg,
                               std::chrono::system_clock::time_point end);

 private:
  std::filesystem::path directory_;
  bool rotating_;
  WrittenProfile previous_;
};

}  // namespace dormant::agent
