// Which buckets a view over a range reads: the coarsest that fit whole, finer ones at its ends
// (days, then hours, then minutes), each size only where its retention still keeps it. Where the
// minutes of an end are gone, the hour that holds it is read whole, and so on: the range read is
// then wider than the one asked for, and says so.
#pragma once

#include <cstdint>
#include <vector>

#include "server/storage/rollup_records.h"

namespace dormant::server::storage {

struct BucketPlan {
  std::vector<BucketRange> ranges;  // in time order; consecutive buckets of a size as one range
  int64_t from_ms = 0;              // the range read
  int64_t to_ms = 0;
};

// [from_ms, to_ms), widened to whole minutes, as buckets; none where to_ms <= from_ms.
// An hour or a day is read whole only where `compacted` says it is.
BucketPlan plan_buckets(int64_t from_ms, int64_t to_ms, int64_t now_ms,
                        const RollupRetention& retention, const Compacted& compacted = {});

// The start of the bucket of `resolution` that holds `ms` (UTC).
int64_t bucket_start(int64_t ms, Resolution resolution);

}  // namespace dormant::server::storage
