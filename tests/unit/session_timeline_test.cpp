// Snapshot times against a wall clock that steps back and forward by an hour: always in order,
// spaced as the monotonic clock says, and back on the wall clock once it is ahead again.
#include "agent/session_timeline.h"

#include <gtest/gtest.h>

namespace dormant::agent {
namespace {

using namespace std::chrono_literals;
using Wall = SessionTimeline::WallClock;
using Monotonic = SessionTimeline::MonotonicClock;

class SessionTimelineTest : public ::testing::Test {
 protected:
  SessionTimeline timeline() {
    return SessionTimeline({[this] { return wall_; }, [this] { return monotonic_; }});
  }
  void pass(std::chrono::seconds seconds) {
    wall_ += seconds;
    monotonic_ += seconds;
  }

  Wall::time_point wall_ = Wall::time_point() + 1'800'000'000s;
  Monotonic::time_point monotonic_ = Monotonic::time_point() + 1000s;
};

TEST_F(SessionTimelineTest, FollowsTheWallClockWhileItRunsEvenly) {
  SessionTimeline times = timeline();
  EXPECT_EQ(times.now(), wall_);
  pass(60s);
  EXPECT_EQ(times.now(), wall_);
}

TEST_F(SessionTimelineTest, ABackwardStepIsNotFollowedUntilTheWallClockCatchesUp) {
  SessionTimeline times = timeline();
  auto before = times.now();
  wall_ -= 1h;
  pass(60s);
  EXPECT_EQ(times.now(), before + 60s) << "on from the monotonic clock";
  pass(60s);
  EXPECT_EQ(times.now(), before + 120s);
  wall_ += 1h - 1s;  // set forward again, a second short of where the timeline is
  EXPECT_EQ(times.now(), before + 120s);
  wall_ += 2s;  // ahead of it: followed again
  EXPECT_EQ(times.now(), wall_);
}

TEST_F(SessionTimelineTest, AForwardStepIsFollowedAtOnceAndTimesStayInOrder) {
  SessionTimeline times = timeline();
  auto first = times.now();
  wall_ += 1h;
  pass(60s);
  auto second = times.now();
  EXPECT_EQ(second, wall_);
  wall_ -= 1h;
  pass(60s);
  auto third = times.now();
  EXPECT_EQ(third, second + 60s);
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
}

}  // namespace
}  // namespace dormant::agent
