#include "server/storage/rollup_plan.h"

#include <algorithm>
#include <optional>

namespace dormant::server::storage {
namespace {

int64_t ceil_to(int64_t ms, int64_t width) {
  int64_t start = ms - (((ms % width) + width) % width);
  return start == ms ? ms : start + width;
}

// A bucket starting at `start` is still kept when its size's retention has not passed it.
bool kept(Resolution resolution, int64_t start, int64_t now_ms, const RollupRetention& retention) {
  auto hours = retention.of(resolution);
  if (hours.count() == 0) return true;
  return start >= now_ms - std::chrono::duration_cast<std::chrono::milliseconds>(hours).count();
}

}  // namespace

int64_t bucket_start(int64_t ms, Resolution resolution) {
  int64_t width = width_ms(resolution);
  return ms - (((ms % width) + width) % width);
}

BucketPlan plan_buckets(int64_t from_ms, int64_t to_ms, int64_t now_ms,
                        const RollupRetention& retention, const Compacted& compacted) {
  BucketPlan plan;
  plan.from_ms = bucket_start(from_ms, Resolution::kMinute);
  plan.to_ms = ceil_to(to_ms, width_ms(Resolution::kMinute));
  if (plan.to_ms <= plan.from_ms) {
    plan.to_ms = plan.from_ms;
    return plan;
  }
  int64_t at = plan.from_ms;
  while (at < plan.to_ms) {
    // The finest size still kept here. Where none is, on to the first bucket one still keeps.
    std::optional<Resolution> finest;
    int64_t first_kept = INT64_MAX;
    for (Resolution resolution : kResolutions) {
      if (kept(resolution, bucket_start(at, resolution), now_ms, retention)) {
        finest = resolution;
        break;
      }
      auto cutoff = std::chrono::duration_cast<std::chrono::milliseconds>(retention.of(resolution));
      first_kept = std::min(first_kept, ceil_to(now_ms - cutoff.count(), width_ms(resolution)));
    }
    if (!finest) {
      at = std::max(first_kept, at + width_ms(Resolution::kMinute));
      continue;
    }
    Resolution chosen = *finest;
    int64_t start = bucket_start(at, chosen);
    for (Resolution coarser : kResolutions) {
      if (width_ms(coarser) <= width_ms(chosen)) continue;
      if (start % width_ms(coarser) == 0 && start + width_ms(coarser) <= plan.to_ms &&
          kept(coarser, start, now_ms, retention) && start < compacted.before(coarser)) {
        chosen = coarser;
      }
    }
    int64_t end = start + width_ms(chosen);
    if (!plan.ranges.empty() && plan.ranges.back().resolution == chosen &&
        plan.ranges.back().end_ms == start) {
      plan.ranges.back().end_ms = end;
    } else {
      plan.ranges.push_back({chosen, start, end});
    }
    at = end;
  }
  if (plan.ranges.empty()) {
    plan.from_ms = plan.to_ms;
  } else {
    plan.from_ms = plan.ranges.front().first_ms;
    plan.to_ms = plan.ranges.back().end_ms;
  }
  return plan;
}

}  // namespace dormant::server::storage
