// Deadlines on the monotonic clock, and their conversion to poll(2) timeouts.
#pragma once

#include <chrono>

namespace dormant {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

inline constexpr Deadline kNoDeadline = Deadline::max();

inline Deadline deadline_after(SteadyClock::duration timeout) {
  return SteadyClock::now() + timeout;
}

// Milliseconds left until `deadline`, rounded up, as poll(2) wants them: -1 for none, 0 if passed.
inline int poll_timeout_ms(Deadline deadline) {
  if (deadline == kNoDeadline) return -1;
  auto left = deadline - SteadyClock::now();
  if (left <= SteadyClock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

}  // namespace dormant
