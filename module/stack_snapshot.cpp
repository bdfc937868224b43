#include "module/stack_snapshot.h"

#include <algorithm>
#include <vector>

#include "profile/collapsed.h"
#include "profile/flamegraph.h"
#include "profile/profile_header.h"

namespace dormant::module {
namespace {

// The `keep` stacks with the most samples.
profile::StackTable heaviest(const profile::StackTable& stacks, size_t keep) {
  std::vector<std::pair<uint64_t, size_t>> order;  // count, position in for_each's order
  stacks.for_each(
      [&](const profile::StackView& stack) { order.emplace_back(stack.count, order.size()); });
  if (keep >= order.size()) return stacks;
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(keep), order.end(),
                   std::greater<>());
  std::vector<bool> keeps(order.size());
  for (size_t i = 0; i < keep; ++i) keeps[order[i].second] = true;
  profile::StackTable kept;
  size_t position = 0;
  std::vector<std::string_view> frames;
  stacks.for_each([&](const profile::StackView& stack) {
    if (!keeps[position++]) return;
    frames.clear();
    for (profile::StringId id : stack.frame_ids) frames.push_back(stacks.string(id));
    kept.add(stack.container, stack.comm, frames, stack.count);
  });
  return kept;
}

}  // namespace

std::string StackSnapshot::collapsed() const { return profile::write_collapsed(stacks_, header_); }

std::string StackSnapshot::flamegraph_svg(const std::string& title,
                                          const std::string& subtitle) const {
  profile::FlamegraphOptions options;
  options.title = title;
  options.subtitle = subtitle;
  return profile::render_flamegraph(stacks_, options);
}

Result<Snapshot::Fitted> StackSnapshot::collapsed_fitting(const Room& room) const {
  const profile::StackTable* sent = &stacks_;
  profile::StackTable trimmed;
  nlohmann::json header = header_;
  Fitted fitted;
  for (int attempt = 0;; ++attempt) {
    fitted.collapsed = profile::write_collapsed(*sent, header);
    Result<double> share = room(fitted.collapsed);
    if (!share) return std::move(share).take_error();
    if (*share >= 1) return fitted;
    if (attempt == 8 || sent->distinct_stacks() <= 1) {
      return Error::invalid_argument(
          "the profile does not fit even with its lightest stacks dropped");
    }
    // Aim below the limit by the share that was over it, with a margin.
    size_t keep = std::max<size_t>(
        1, static_cast<size_t>(0.9 * *share * static_cast<double>(sent->distinct_stacks())));
    trimmed = heaviest(stacks_, keep);
    sent = &trimmed;
    fitted.dropped_stacks = stacks_.distinct_stacks() - trimmed.distinct_stacks();
    header["truncated"] = {
        {"reason",
         "the profile was larger than its destination takes; the stacks with the "
         "fewest samples were dropped"},
        {"dropped_stacks", fitted.dropped_stacks},
        {"dropped_samples", stacks_.total_samples() - trimmed.total_samples()}};
  }
}

nlohmann::json profile_header(const ProfileFacts& facts, const SnapshotTimes& times,
                              const profile::StackTable& stacks) {
  profile::SnapshotInfo info;
  info.agent_version = facts.agent_version;
  info.spawn_time = facts.spawn_time;
  info.spawn_uptime_ms = facts.spawn_uptime_ms;
  info.run_arguments = facts.run_arguments;
  info.profiling_mode = facts.profiling_mode;
  info.cpu_avg = times.cpu_avg;
  info.mem_avg = times.mem_avg;
  info.containers = stacks.containers();
  info.current_time = times.end;
  return profile::make_profile_header(facts.host, info);
}

}  // namespace dormant::module
