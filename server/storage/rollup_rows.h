// The rollup tables (rollup_records.h): a bucket's row per service, and per label key; each
// stack's text once per service, with the newest day that holds it, so that retention can let
// go of texts no bucket refers to. Callers hold the transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/rollup_records.h"

namespace dormant::server::storage {

// A bucket: of the whole service, or of one label key.
struct BucketKey {
  std::string_view service;
  Resolution resolution = Resolution::kMinute;
  int64_t bucket_ms = 0;
  const LabelKey* label = nullptr;  // none: the whole service
};

// What a bucket holds besides its stacks.
struct BucketTotals {
  int64_t profiles = 0;
  int64_t samples = 0;
  int64_t first_start_ms = 0;
  int64_t last_end_ms = 0;
  int64_t frequency_hz = 0;  // every profile's, or 0 where they differ

  // Counts `other`'s profiles in these: samples summed (at most INT64_MAX), the earliest start,
  // the latest end, the frequency where both give the same.
  void add(const BucketTotals& other);
};

// Adds one profile's stacks (by id) to a bucket: its totals count one more profile of
// [start_ms, end_ms) at `frequency_hz`. A bucket holds at most `max_stacks` distinct stacks
// (add_stacks).
Result<void> add_to_bucket(Database& db, const BucketKey& key, std::span<const StackCount> stacks,
                           int64_t start_ms, int64_t end_ms, uint64_t frequency_hz,
                           size_t max_stacks);

// Replaces a bucket's stacks and totals with these.
Result<void> put_bucket(Database& db, const BucketKey& key, std::span<const StackCount> stacks,
                        const BucketTotals& totals);

// Keeps each stack's text for `service`, and `day_ms` as the newest day that holds it.
Result<void> remember_stack_texts(Database& db, std::string_view service, int64_t day_ms,
                                  std::span<const std::pair<StackId, std::string>> texts);

struct BucketRow {
  Resolution resolution = Resolution::kMinute;
  int64_t bucket_ms = 0;
  std::optional<LabelKey> label;
  BucketTotals totals;
  std::string_view stacks;  // valid during the visit
};

// Visits every bucket of `service` in `ranges`: the service's own, or with `by_label` those of
// its label keys (of `hostname` alone when given); without `with_stacks`, their totals alone. A
// visit's error stops the reading.
Result<void> read_buckets(Database& db, std::string_view service,
                          std::span<const BucketRange> ranges, bool by_label,
                          const std::optional<std::string>& hostname,
                          const std::function<Result<void>(const BucketRow&)>& visit,
                          bool with_stacks = true);

// The hosts with label buckets of `service` in `ranges`.
Result<std::set<std::string>> read_bucket_hosts(Database& db, std::string_view service,
                                                std::span<const BucketRange> ranges);

// Calls `found` with the text of each of `ids` that `service` keeps.
Result<void> read_stack_texts(Database& db, std::string_view service, std::span<const StackId> ids,
                              const std::function<void(StackId, std::string_view)>& found);

// How far each coarser size of a service's buckets is whole (rollup_records.h: Compacted);
// INT64_MIN for a size never compacted.
Result<Compacted> read_compacted(Database& db, std::string_view service);
Result<void> write_compacted(Database& db, std::string_view service, Resolution resolution,
                             int64_t before_ms);
// The start of the service's first minute bucket at or after `from_ms`; none without any.
Result<std::optional<int64_t>> next_minute_bucket(Database& db, std::string_view service,
                                                  int64_t from_ms);
// The services with buckets of `resolution`, or of any size.
Result<std::vector<std::string>> services_with_rollups(Database& db,
                                                       std::optional<Resolution> resolution);

// Deletes up to `batch` buckets of `resolution` that start before `cutoff_ms`, of both tables;
// returns how many.
Result<int64_t> delete_buckets_before(Database& db, Resolution resolution, int64_t cutoff_ms,
                                      int64_t batch);
// Deletes up to `batch` texts no bucket since `cutoff_ms` holds; returns how many.
Result<int64_t> delete_stack_texts_before(Database& db, int64_t cutoff_ms, int64_t batch);

}  // namespace dormant::server::storage
