// Many stored profiles as one: a service's stacks over a time range, read from its rollups
// (server/storage/rollup_records.h), so that the cost follows the distinct stacks and the buckets
// read, not the number of profiles. Merged over hosts and containers, as Performance Studio's
// views are; a filter picks hosts, containers or instance types. Idle CPU samples are left out
// and counted. One profile's stacks (its own flamegraph) go through the same type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "profile/collapsed.h"
#include "profile/stack_table.h"
#include "server/storage/store.h"

namespace dormant::server::api {

struct MergeSelection {
  std::string service;
  storage::TimePoint since;
  storage::TimePoint until;
  std::optional<storage::LabelFilter> filter;
  bool keep_idle = false;
  // Distinct stacks kept, and the memory they may take (StackTable::bytes: stacks 2,048 frames
  // deep with long names hold far more than a million stacks' worth); the samples of stacks
  // beyond either are counted under one stack named kStacksBeyondLimit.
  size_t max_stacks = 1 << 20;
  size_t max_bytes = 128 << 20;
};

inline constexpr std::string_view kStacksBeyondLimit = "[stacks beyond the merge's limit]";

struct MergedProfile {
  profile::StackTable stacks;
  std::optional<int64_t> profiles;  // unknown for a filtered merge: its buckets split profiles
  int64_t buckets = 0;              // rollup buckets that held data
  uint64_t idle_samples = 0;        // left out
  uint64_t samples_beyond_limit = 0;
  std::set<std::string> hosts;
  // The sampling frequency every merged profile's header gives; 0 when they differ or none does.
  uint64_t frequency_hz = 0;
  std::optional<storage::TimePoint> first_start;
  std::optional<storage::TimePoint> last_end;
  // The range read: the one asked for, widened to whole minutes (or hours, days, where the finer
  // buckets are past their retention).
  std::optional<storage::TimePoint> range_start;
  std::optional<storage::TimePoint> range_end;

  // Adds one profile's stacks, containers kept.
  void add_profile(const profile::CollapsedProfile& profile, bool keep_idle);
  nlohmann::json summary() const;
};

// The rollups' query for what `selection` picks.
storage::RollupQuery rollup_query(const MergeSelection& selection);

// A rollup stack's text, "comm;frame;…;frame": its comm, its frames put in `frames`.
std::string_view split_stack_text(std::string_view text, std::vector<std::string_view>& frames);

// The merge of what `selection` picks, from the rollups.
Result<MergedProfile> merge_rollups(storage::Store& store, const MergeSelection& selection);

}  // namespace dormant::server::api
