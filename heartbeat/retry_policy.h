// When to try the server again: the regular interval with jitter while things work; while they
// fail, the interval doubled at each failure up to a cap (a server that is down is not polled
// harder than one that is up); back to the interval on the first success. Jitter keeps a fleet
// that restarted together from heartbeating in lockstep.
#pragma once

#include <chrono>
#include <functional>

namespace dormant::heartbeat {

struct RetryPolicy {
  std::chrono::milliseconds interval{30'000};
  std::chrono::milliseconds max_backoff{300'000};  // the interval, when that is longer
  // Each delay is scaled by a factor drawn from [1 - jitter, 1 + jitter]; at most 0.5.
  double jitter = 0.1;
};

class RetryTimer {
 public:
  // `random01` draws from [0, 1); tests pass a fixed one.
  explicit RetryTimer(RetryPolicy policy, std::function<double()> random01 = {});

  // The delay before the next attempt, after one that succeeded or failed.
  std::chrono::milliseconds after_success();
  std::chrono::milliseconds after_failure();

  int consecutive_failures() const { return failures_; }
  std::chrono::milliseconds interval() const { return policy_.interval; }

 private:
  std::chrono::milliseconds jittered(std::chrono::milliseconds delay);

  RetryPolicy policy_;
  std::function<double()> random01_;
  int failures_ = 0;
};

}  // namespace dormant::heartbeat
