// Profiles into rollups and views out of them (rollup_records.h), over rollup_rows.h: what the
// Store runs in its transactions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"
#include "server/storage/rollup_plan.h"

namespace dormant::server::storage {

// Adds a profile of `service` over [start, end] to the minute that holds its start, and to its
// hour and day where those are compacted already (Compacted): the service's buckets and each of
// its parts' label buckets. `new_texts`: those of its stacks'
// texts the database may lack. In the upload's write transaction; on PostgreSQL it waits for
// other uploads of the service.
Result<void> roll_up_profile(Database& db, const std::string& service, TimePoint start,
                             TimePoint end, const ProfileRollup& rollup,
                             std::span<const std::pair<StackId, std::string>> new_texts,
                             size_t max_stacks);

// The stacks of `query.service` in the buckets of `plan`, without their texts: the service's own
// buckets when the query has no filter, else its label buckets that match it.
Result<RollupView> read_rollup(Database& db, const RollupQuery& query, const BucketPlan& plan);

// How a series counts a stack besides its samples: as picked (it holds a function looked for) or
// left out (idle).
enum class StackClass : uint8_t { kPicked, kLeftOut };
using StackClasses = std::unordered_map<StackId, StackClass>;

// One slot of a series over a range: the samples of the buckets that start in it, and of those
// the samples of picked and of left-out stacks.
struct RollupSlot {
  int64_t slot_ms = 0;  // its start: a multiple of the slot's width (UTC)
  int64_t samples = 0;
  uint64_t picked = 0;
  uint64_t left_out = 0;
};

// The buckets of `resolution` that start in [query.from, query.to) widened to whole buckets, that
// the query's filter (or none) matches, summed into slots of `slot_ms`, a multiple of the
// resolution's width; in time order, slots without data left out. Without `classes`, only the
// buckets' totals are read.
Result<std::vector<RollupSlot>> read_rollup_slots(Database& db, const RollupQuery& query,
                                                  Resolution resolution, int64_t slot_ms,
                                                  const Compacted& compacted,
                                                  const StackClasses* classes);

// The samples of each label key of `service` in the buckets of `plan`.
Result<std::map<LabelKey, int64_t>> read_label_samples(Database& db, const std::string& service,
                                                       const BucketPlan& plan);

// The first start and the last end of the profiles in the buckets of `plan` that `filter` (or
// none) matches; none when no bucket has data.
Result<std::optional<std::pair<int64_t, int64_t>>> read_data_span(
    Database& db, const std::string& service, const std::optional<LabelFilter>& filter,
    const BucketPlan& plan);

// An hour is compacted this long after it ends, a day after its last hour is: the uploads of
// its profiles have come by then. A later one is added to the compacted bucket directly.
inline constexpr int64_t kCompactionGraceMs = 10 * 60'000;

// Compacts the service's next hour (from its minutes) or day (from its hours) that is over, in a
// write transaction of its own that waits for the service's uploads; false when none is due.
Result<bool> compact_next_bucket(Database& db, const std::string& service, int64_t now_ms,
                                 size_t max_stacks);

// Migration 8's step: the rollups of a database written before compaction existed are whole up
// to the current hour and day (every upload added to them); those are compacted again later.
Result<void> mark_rollups_compacted(Database& db);

// Deletes up to `batch` buckets of each size past its retention, and texts no kept day bucket
// holds; each in a write transaction of its own. Returns the rows deleted.
Result<int64_t> expire_rollups(Database& db, const RollupRetention& retention, int64_t now_ms,
                               int64_t batch);

}  // namespace dormant::server::storage
