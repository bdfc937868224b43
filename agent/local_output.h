// Writes each snapshot to -o DIR as the formats ask: profile_<UTC time, ms>.col (collapsed),
// .svg (its flamegraph) and .pb.gz (pprof), with the links last_profile.col, last_flamegraph.svg
// and last_profile.pb.gz; with --rotating-output only the last one is kept.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace dormant::agent {

// The converter installed beside dormant-agent (profile/pprof/dormant_pprof_main.cpp).
inline constexpr char kPprofTool[] = "dormant-pprof";

struct LocalFormats {
  bool collapsed = true;
  bool svg = true;
  bool pprof = false;
};

struct WrittenProfile {
  std::vector<std::filesystem::path> files;
};

class LocalOutput {
 public:
  // `pprof_tool`: dormant-pprof, which turns a collapsed file into pprof. The agent does not link
  // protobuf: its runtime cannot be unloaded, and the agent returns to its idle footprint.
  LocalOutput(std::filesystem::path directory, bool rotating, LocalFormats formats,
              std::filesystem::path pprof_tool)
      : directory_(std::move(directory)),
        rotating_(rotating),
        formats_(formats),
        pprof_tool_(std::move(pprof_tool)) {}

  const LocalFormats& formats() const { return formats_; }

  // The profile of [start, end]; `flamegraph_svg` is written when the formats ask for svg.
  Result<WrittenProfile> write(const std::string& collapsed, const std::string& flamegraph_svg,
                               std::chrono::system_clock::time_point start,
                               std::chrono::system_clock::time_point end);

 private:
  Result<void> write_pprof(const std::filesystem::path& collapsed_file,
                           const std::filesystem::path& pprof_file,
                           std::chrono::system_clock::time_point start,
                           std::chrono::system_clock::time_point end) const;

  std::filesystem::path directory_;
  bool rotating_;
  LocalFormats formats_;
  std::filesystem::path pprof_tool_;
  WrittenProfile previous_;
};

}  // namespace dormant::agent
