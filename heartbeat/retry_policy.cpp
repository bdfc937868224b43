#include "heartbeat/retry_policy.h"

#include <algorithm>
#include <random>

namespace dormant::heartbeat {

RetryTimer::RetryTimer(RetryPolicy policy, std::function<double()> random01)
    : policy_(policy), random01_(std::move(random01)) {
  // Settings that would retry in a hot loop are brought back to something sane.
  policy_.interval = std::max(policy_.interval, std::chrono::milliseconds(1));
  policy_.jitter = std::clamp(policy_.jitter, 0.0, 0.5);
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
  auto scaled = static_cast<int64_t>(static_cast<double>(delay.count()) * factor);
  return std::chrono::milliseconds(std::max<int64_t>(scaled, 1));
}

}  // namespace dormant::heartbeat
