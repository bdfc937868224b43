#include "server/api/profile_merge.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/iso_time.h"
#include "profile/idle_stacks.h"
#include "profile/profile_header.h"

namespace dormant::server::api {
void MergedProfile::add(const profile::CollapsedProfile& profile, const MergeSelection& selection) {
  std::vector<std::string_view> frames;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    if (selection.container && stack.container != *selection.container) {
      other_container_samples += stack.count;
      return;
    }
    if (!selection.keep_idle && profile::is_idle_stack(profile.stacks, stack)) {
      idle_samples += stack.count;
      return;
    }
    frames.clear();
    for (profile::StringId id : stack.frame_ids) frames.push_back(profile.stacks.string(id));
    if (!stacks.add_within(stack.container, stack.comm, frames, stack.count, selection.max_stacks,
                           selection.max_bytes)) {
      stacks.add("", kStacksBeyondLimit, {}, stack.count);
      samples_beyond_limit += stack.count;
    }
  });
  uint64_t frequency = profile::header_frequency(profile.header);
  if (!frequency_seen_) {
    frequency_hz = frequency;
    frequency_seen_ = true;
  } else if (frequency != frequency_hz) {
    frequency_hz = 0;
  }
  ++profiles;
}

nlohmann::json MergedProfile::summary() const {
  nlohmann::json json = {
      {"profiles", profiles},
      {"profiles_unreadable", profiles_unreadable},
      {"more_profiles", more_profiles},
      {"hosts", hosts},
      {"samples", stacks.total_samples()},
      {"idle_samples_left_out", idle_samples},
      {"other_container_samples_left_out", other_container_samples},
      {"samples_beyond_stack_limit", samples_beyond_limit},
      {"frequency", frequency_hz},
  };
  if (first_start) json["start_time"] = iso_utc(*first_start);
  if (last_end) json["end_time"] = iso_utc(*last_end);
  return json;
}

Result<MergedProfile> merge_profiles(storage::Store& store, const MergeSelection& selection) {
  storage::ProfileFilter filter = selection.profiles;
  ++filter.limit;  // one more than merged says whether there were more
  auto listed = store.list_profiles(filter);
  if (!listed) return std::move(listed).take_error();
  MergedProfile merged;
  if (listed->size() > static_cast<size_t>(selection.profiles.limit)) {
    merged.more_profiles = true;
    listed->resize(static_cast<size_t>(selection.profiles.limit));
  }
  uint64_t text_bytes = 0;
  for (const storage::StoredProfile& stored : *listed) {
    text_bytes += static_cast<uint64_t>(std::max<int64_t>(0, stored.raw_size));
  }
  if (text_bytes > selection.max_text_bytes) {
    return Error::invalid_argument("the " + std::to_string(listed->size()) +
                                   " profiles selected hold " + std::to_string(text_bytes >> 20) +
                                   " MiB of text; a merge reads at most " +
                                   std::to_string(selection.max_text_bytes >> 20) +
                                   " MiB: choose a shorter time range, a host or a lower limit");
  }
  for (const storage::StoredProfile& stored : *listed) {
    if (selection.stop_when && selection.stop_when()) {
      return Error(ErrorKind::kCancelled, "the merge stopped: its client went away");
    }
    auto text = store.read_profile(stored.gpid);
    if (!text && text.error().kind() != ErrorKind::kNotFound) return std::move(text).take_error();
    auto parsed = text ? profile::read_collapsed(*text)
                       : Result<profile::CollapsedProfile>(std::move(text).take_error());
    if (!parsed) {
      ++merged.profiles_unreadable;
      continue;
    }
    merged.add(*parsed, selection);
    merged.hosts.insert(stored.hostname);
    merged.first_start =
        std::min(merged.first_start.value_or(stored.start_time), stored.start_time);
    merged.last_end = std::max(merged.last_end.value_or(stored.end_time), stored.end_time);
  }
  return merged;
}

}  // namespace dormant::server::api
