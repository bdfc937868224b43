// Many stored profiles as one: every profile a filter selects, read and parsed one at a time and
// added to one StackTable, so that memory grows with the distinct stacks, not with the number of
// profiles. Idle CPU samples and other containers' stacks are left out and counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "profile/collapsed.h"
#include "profile/stack_table.h"
#include "server/storage/store.h"

namespace dormant::server::api {

struct MergeSelection {
  storage::ProfileFilter profiles;  // its limit: the most profiles merged
  std::optional<std::string> container;
  bool keep_idle = false;
  // Distinct stacks kept, and the memory they may take (StackTable::bytes: stacks 2,048 frames
  // deep with long names hold far more than a million stacks' worth); the samples of stacks
  // beyond either are counted under one stack named kStacksBeyondLimit.
  size_t max_stacks = 1 << 20;
  size_t max_bytes = 128 << 20;
  // Profile text read, all profiles together (their sizes as stored, uncompressed): a selection
  // that holds more is refused before any is read (kInvalidArgument, answered 413).
  uint64_t max_text_bytes = uint64_t{1} << 30;
  // Asked between profiles: true stops the merge (kCancelled), its client gone.
  std::function<bool()> stop_when;
};

inline constexpr std::string_view kStacksBeyondLimit = "[stacks beyond the merge's limit]";

struct MergedProfile {
  profile::StackTable stacks;
  int64_t profiles = 0;
  int64_t profiles_unreadable = 0;  // deleted meanwhile, or not a valid collapsed profile
  bool more_profiles = false;       // more matched than the selection's limit
  uint64_t idle_samples = 0;        // left out
  uint64_t other_container_samples = 0;
  uint64_t samples_beyond_limit = 0;
  std::set<std::string> hosts;
  // The sampling frequency every merged profile's header gives; 0 when they differ or none does.
  uint64_t frequency_hz = 0;
  std::optional<storage::TimePoint> first_start;
  std::optional<storage::TimePoint> last_end;

  // Adds one profile's stacks as the selection says.
  void add(const profile::CollapsedProfile& profile, const MergeSelection& selection);
  nlohmann::json summary() const;

 private:
  bool frequency_seen_ = false;
};

// The merge, or kInvalidArgument past max_text_bytes, or kCancelled when stop_when said so.
Result<MergedProfile> merge_profiles(storage::Store& store, const MergeSelection& selection);

}  // namespace dormant::server::api
