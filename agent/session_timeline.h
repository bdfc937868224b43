// The wall-clock times a session stamps on its snapshots, kept in order whatever the wall clock
// does: they advance with the monotonic clock, follow the wall clock when it is ahead (a forward
// step is taken at once), and do not follow it back (after a backward step they go on from where
// they were until the wall clock catches up). A step is logged once.
#pragma once

#include <chrono>
#include <functional>

namespace dormant::agent {

class SessionTimeline {
 public:
  using WallClock = std::chrono::system_clock;
  using MonotonicClock = std::chrono::steady_clock;
  struct Clocks {
    std::function<WallClock::time_point()> wall = [] { return WallClock::now(); };
    std::function<MonotonicClock::time_point()> monotonic = [] { return MonotonicClock::now(); };
  };

  SessionTimeline();  // the real clocks
  explicit SessionTimeline(Clocks clocks);
  // Never earlier than the time it returned before.
  WallClock::time_point now();

 private:
  Clocks clocks_;
  WallClock::time_point wall_anchor_;
  MonotonicClock::time_point monotonic_anchor_;
  bool behind_ = false;  // the wall clock went back and has not caught up yet
};

}  // namespace dormant::agent
