// Which of a thread's launches have their stacks taken. Taking one costs about half a microsecond
// (the unwind, the Python frames, the batch), which a launch-bound thread pays on its critical
// path; past `rate` launches a second, a thread's launches are taken at random with the
// probability that brings it back to that rate, measured over the last window. At random, so
// that no launch site of a loop is favoured; the others still go to the agent, without a stack,
// and their GPU work takes the stacks of the thread's taken launches of the same kernel.
#pragma once

#include <cstdint>

namespace dormant::cupti {

class LaunchSampler {
 public:
  static constexpr uint64_t kWindowNs = 100'000'000;

  // `rate`: launches a second taken whole; 0 takes every one.
  LaunchSampler(uint32_t rate, uint64_t seed);

  // Whether the launch at `now_ns` (a monotonic clock) has its stack taken.
  bool take(uint64_t now_ns);

 private:
  uint64_t next_random();

  uint32_t rate_;
  uint64_t random_;
  uint64_t window_launches_;
  uint64_t window_start_ns_ = 0;
  uint64_t launches_ = 0;  // in the window so far
  bool every_ = true;
  uint64_t threshold_ = 0;  // of next_random() below which a launch is taken, unless every_
};

// The rate DORMANT_CUPTI_LAUNCH_RATE sets in the program's environment (read once), or
// kDefaultLaunchRate.
inline constexpr uint32_t kDefaultLaunchRate = 20'000;
uint32_t launch_rate();

}  // namespace dormant::cupti
