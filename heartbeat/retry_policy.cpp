#include "heartbeat/retry_policy.h"

#include <algorithm>
#include <random>

namespace dormant::heartbeat {

RetryTimer::RetryTimer(RetryPolicy policy, std::function<double()> random01)
    : policy_(policy), random01_(std::move(random01)) {
  if (!random01_) {
    random01_ = [engine = std::mt19937_64(std::random_device()())]() mutable {
      return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
    };
  }
}

std::chrono::milliseconds RetryTimer::after_success() {
  failures_ = 0;
  return jittered(policy_.interval);
}

std::chrono::milliseconds RetryTimer::after_failure() {
  ++failures_;
  auto cap = std::max(policy_.max_backoff, policy_.interval);
  auto delay = policy_.interval;
  for (int i = 1; i < failures_ && delay < cap; ++i) delay *= 2;
  return jittered(std::min(delay, cap));
}

std::chrono::milliseconds RetryTimer::jittered(std::chrono::milliseconds delay) {
  double factor = 1.0 + policy_.jitter * (2.0 * random01_() - 1.0);
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(delay.count()) * std::max(0.0, factor)));
}

}  // namespace dormant::heartbeat
