#include "agent/session_timeline.h"

#include <spdlog/spdlog.h>

namespace dormant::agent {
namespace {

// Less than this between the two clocks is drift, not a step.
constexpr auto kStep = std::chrono::seconds(1);

}  // namespace

SessionTimeline::SessionTimeline() : SessionTimeline(Clocks{}) {}

SessionTimeline::SessionTimeline(Clocks clocks)
    : clocks_(std::move(clocks)),
      wall_anchor_(clocks_.wall()),
      monotonic_anchor_(clocks_.monotonic()) {}

SessionTimeline::WallClock::time_point SessionTimeline::now() {
  auto monotonic = clocks_.monotonic();
  auto wall = clocks_.wall();
  auto along =
      wall_anchor_ + std::chrono::duration_cast<WallClock::duration>(monotonic - monotonic_anchor_);
  if (wall >= along) {
    if (behind_) {
      spdlog::info("the wall clock has caught up: snapshot times follow it again");
    } else if (wall - along > kStep) {
      spdlog::warn("the wall clock jumped ahead {} s: snapshot times follow it",
                   std::chrono::duration_cast<std::chrono::seconds>(wall - along).count());
    }
    behind_ = false;
    wall_anchor_ = wall;
    monotonic_anchor_ = monotonic;
    return wall;
  }
  if (!behind_ && along - wall > kStep) {
    behind_ = true;
    spdlog::warn(
        "the wall clock went back {} s: this session's snapshot times go on from the monotonic "
        "clock, in order, until the wall clock catches up",
        std::chrono::duration_cast<std::chrono::seconds>(along - wall).count());
  }
  return along;
}

}  // namespace dormant::agent
