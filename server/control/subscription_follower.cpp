#include "server/control/subscription_follower.h"

#include <algorithm>
#include <string>
#include <vector>

#include "server/control/command_plan.h"
#include "server/control/selector_resolver.h"

namespace dormant::server::control {
namespace {

using storage::HostSubscription;

// What the subscriptions pick on the host now, merged: nullopt when none picks it, a nullopt pid
// list when one picks it whole. `chosen`: the oldest that picks it.
std::optional<std::optional<PidList>> subscribed_targets(
    const SelectorResolver& resolver, const std::vector<HostSubscription>& subscriptions,
    const std::string& service, const HostSubscription*& chosen) {
  std::optional<std::optional<PidList>> merged;
  for (const HostSubscription& subscription : subscriptions) {
    auto found = resolver.resolve_here(subscription.scope, service, *subscription.selectors);
    if (!found) continue;
    if (!chosen) chosen = &subscription;
    if (!*found || (merged && !*merged)) {
      merged = std::optional<PidList>();
      continue;
    }
    PidList pids = merged ? **merged : PidList{};
    pids.insert(pids.end(), (*found)->begin(), (*found)->end());
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    merged = std::optional<PidList>(std::move(pids));
  }
  return merged;
}

}  // namespace

Result<std::optional<storage::PlannedHost>> follow_subscriptions(
    const storage::SubscriptionReads& reads) {
  using Followed = std::optional<storage::PlannedHost>;
  const auto& subscriptions = reads.subscriptions;
  const auto& current = reads.current;
  if (subscriptions.empty()) return Followed();
  std::optional<std::string> owner;
  if (current) {
    for (const HostSubscription& subscription : subscriptions) {
      const auto& ids = current->command.request_ids;
      if (std::find(ids.begin(), ids.end(), subscription.request_id) != ids.end()) {
        owner = subscription.request_id;
      }
    }
  }
  std::optional<CurrentCommand> view = planning_view(current);
  bool standing = view && is_standing_start(*view, reads.now);
  if (current && !owner) {
    if (standing) return Followed();
    if (current->command.type == storage::CommandType::kStop &&
        current->command.created_at >= subscriptions.front().created_at) {
      return Followed();
    }
  }
  auto inventory = reads.inventory();
  if (!inventory) return std::move(inventory).take_error();
  std::optional<std::optional<PidList>> wanted;
  const HostSubscription* chosen = nullptr;
  if (*inventory) {
    SelectorResolver resolver(std::move(**inventory));
    wanted = subscribed_targets(resolver, subscriptions, reads.service, chosen);
  }
  CommandSpec spec;
  std::string request_id;
  if (!wanted) {
    if (!owner || !standing) return Followed();
    spec.type = storage::CommandType::kStop;
    spec.stop_level = StopLevel::kHost;
    request_id = *owner;
  } else {
    auto request = reads.request(chosen->request_id);
    if (!request) return std::move(request).take_error();
    if (!*request) return Followed();  // expired with its commands: nothing to run
    const storage::ProfilingRequestRecord& record = **request;
    spec.continuous = true;
    spec.duration_s = record.duration_s.value_or(60);
    spec.frequency_hz = record.frequency_hz.value_or(11);
    spec.mode = record.mode.value_or(storage::ProfilingMode::kCpu);
    spec.additional_args = record.additional_args.value_or(nlohmann::json::object());
    spec.pids = *wanted;
    if (owner && standing && view->spec.pids == spec.pids) return Followed();
    request_id = chosen->request_id;
  }
  HostChange change{current ? PlanAction::kReplaced : PlanAction::kNew, spec, false};
  return Followed(
      next_command(reads.hostname, reads.service, change, current, request_id, reads.now, false));
}

}  // namespace dormant::server::control
