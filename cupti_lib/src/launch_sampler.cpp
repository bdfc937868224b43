#include "cupti_lib/src/launch_sampler.h"

#include <algorithm>
#include <cstdlib>

namespace dormant::cupti {

LaunchSampler::LaunchSampler(uint32_t rate, uint64_t seed)
    : rate_(rate),
      random_(seed | 1),
      window_launches_(std::max<uint64_t>(64, uint64_t{rate} * kWindowNs / 1'000'000'000)) {}

bool LaunchSampler::take(uint64_t now_ns) {
  if (rate_ == 0) return true;
  ++launches_;
  // A window ends after kWindowNs or after a window's worth of launches at the rate, whichever
  // comes first: a burst is brought back to the rate within that many launches.
  if (now_ns - window_start_ns_ >= kWindowNs || launches_ >= window_launches_) {
    double allowed =
        static_cast<double>(rate_) * static_cast<double>(now_ns - window_start_ns_) / 1e9;
    double launched = static_cast<double>(launches_);
    every_ = launched <= allowed;
    threshold_ = every_ ? 0 : static_cast<uint64_t>(allowed / launched * 0x1p64);
    window_start_ns_ = now_ns;
    launches_ = 0;
  }
  return every_ || next_random() < threshold_;
}

uint64_t LaunchSampler::next_random() {  // xorshift64
  random_ ^= random_ << 13;
  random_ ^= random_ >> 7;
  random_ ^= random_ << 17;
  return random_;
}

uint32_t launch_rate() {
  static const uint32_t rate = [] {
    const char* value = std::getenv("DORMANT_CUPTI_LAUNCH_RATE");
    if (value == nullptr || *value == '\0') return kDefaultLaunchRate;
    char* end = nullptr;
    unsigned long parsed = std::strtoul(value, &end, 10);
    if (*end != '\0' || parsed > UINT32_MAX) return kDefaultLaunchRate;
    return static_cast<uint32_t>(parsed);
  }();
  return rate;
}

}  // namespace dormant::cupti
