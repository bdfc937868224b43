#include "server/api/profile_merge.h"

#include <vector>

#include "common/iso_time.h"
#include "profile/idle_stacks.h"
#include "profile/profile_header.h"

namespace dormant::server::api {
namespace {

inline constexpr std::string_view kStacksWithoutText = "[stacks whose text is no longer kept]";

}  // namespace

void MergedProfile::add_profile(const profile::CollapsedProfile& profile, bool keep_idle) {
  std::vector<std::string_view> frames;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    if (!keep_idle && profile::is_idle_stack(profile.stacks, stack)) {
      idle_samples += stack.count;
      return;
    }
    frames.clear();
    for (profile::StringId id : stack.frame_ids) frames.push_back(profile.stacks.string(id));
    stacks.add(stack.container, stack.comm, frames, stack.count);
  });
  frequency_hz = profile::header_frequency(profile.header);
  profiles = profiles.value_or(0) + 1;
}

nlohmann::json MergedProfile::summary() const {
  nlohmann::json json = {
      {"profiles", profiles ? nlohmann::json(*profiles) : nlohmann::json(nullptr)},
      {"buckets", buckets},
      {"hosts", hosts},
      {"samples", stacks.total_samples()},
      {"idle_samples_left_out", idle_samples},
      {"samples_beyond_stack_limit", samples_beyond_limit},
      {"frequency", frequency_hz},
  };
  if (first_start) json["start_time"] = iso_utc(*first_start);
  if (last_end) json["end_time"] = iso_utc(*last_end);
  if (range_start) json["range_start"] = iso_utc(*range_start);
  if (range_end) json["range_end"] = iso_utc(*range_end);
  return json;
}

std::string_view split_stack_text(std::string_view text, std::vector<std::string_view>& frames) {
  size_t end = text.find(';');
  std::string_view comm = text.substr(0, end);
  frames.clear();
  while (end != std::string_view::npos) {
    text.remove_prefix(end + 1);
    end = text.find(';');
    frames.push_back(text.substr(0, end));
  }
  return comm;
}

storage::RollupQuery rollup_query(const MergeSelection& selection) {
  storage::RollupQuery query;
  query.service = selection.service;
  query.from = selection.since;
  query.to = selection.until;
  query.filter = selection.filter;
  query.max_stacks = selection.max_stacks;
  return query;
}

Result<MergedProfile> merge_rollups(storage::Store& store, const MergeSelection& selection) {
  auto view = store.read_rollup(rollup_query(selection));
  if (!view) return std::move(view).take_error();
  MergedProfile merged;
  merged.profiles = view->profiles;
  merged.buckets = view->buckets;
  merged.hosts = std::move(view->hosts);
  merged.frequency_hz = view->frequency_hz;
  merged.first_start = view->first_start;
  merged.last_end = view->last_end;
  merged.range_start = view->from;
  merged.range_end = view->to;
  // Added last, so that they take none of the stacks' room.
  uint64_t beyond = 0;
  uint64_t without_text = 0;
  std::vector<std::string_view> frames;
  auto text = view->texts.begin();
  for (const storage::StackCount& stack : view->stacks) {
    if (stack.id == storage::kStacksPastCap) {
      beyond += stack.count;
      continue;
    }
    while (text != view->texts.end() && text->first < stack.id) ++text;
    if (text == view->texts.end() || text->first != stack.id) {
      without_text += stack.count;
      continue;
    }
    std::string_view comm = split_stack_text(text->second, frames);
    if (!selection.keep_idle && profile::is_idle_stack(comm, frames)) {
      merged.idle_samples += stack.count;
      continue;
    }
    if (!merged.stacks.add_within("", comm, frames, stack.count, selection.max_stacks,
                                  selection.max_bytes)) {
      beyond += stack.count;
    }
  }
  if (without_text > 0) merged.stacks.add("", kStacksWithoutText, {}, without_text);
  if (beyond > 0) {
    merged.stacks.add("", kStacksBeyondLimit, {}, beyond);
    merged.samples_beyond_limit = beyond;
  }
  return merged;
}

}  // namespace dormant::server::api
