#include "profilers/gpu/launch_join.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace dormant::profilers::gpu {

void LaunchJoin::hand_out(const JoinedWork& joined) {
  if (joined_.size() < limits_.max_handed_out) {
    joined_.push_back(joined);
    return;
  }
  ns_past_bound_ += joined.work.duration_ns;
  ++counts_.past_bound;
}

void LaunchJoin::join(const PendingLaunch& pending, const GpuWork& work) {
  hand_out({work, true, pending.launch.cbid, pending.launch.stack, pending.launch.tid});
  ++counts_.joined;
}

void LaunchJoin::forget_launch(Launch launch) {
  launches_.erase({launch.pid, launch.correlation_id});
  if (launch.nested_correlation_id != 0) {
    launches_.erase({launch.pid, launch.nested_correlation_id});
  }
}

void LaunchJoin::give_up_work(const GpuWork& work) {
  hand_out({work, false, 0, 0, 0});
  ++counts_.unmatched_work;
}

void LaunchJoin::joined_graph(const Launch& launch, JoinClock::time_point now) {
  for (uint32_t id : {launch.correlation_id, launch.nested_correlation_id}) {
    auto entry = launches_.find({launch.pid, id});
    if (entry == launches_.end()) continue;
    if (!entry->second.joined && !entry->second.alias)
      joined_graphs_.emplace_back(entry->first, now);
    entry->second.joined = true;
    entry->second.last_work = now;
  }
}

void LaunchJoin::retire_graphs_while(const std::function<bool(JoinClock::time_point)>& retire) {
  while (!joined_graphs_.empty()) {
    auto [key, queued] = joined_graphs_.front();
    if (!retire(queued)) return;  // nor any queued after it
    joined_graphs_.pop_front();
    auto found = launches_.find(key);
    if (found == launches_.end() || !found->second.joined) continue;  // given up already
    if (found->second.last_work != queued && !retire(found->second.last_work)) {
      joined_graphs_.emplace_back(key, found->second.last_work);  // a kernel came since
      continue;
    }
    forget_launch(found->second.launch);
    ++counts_.graphs_retired;
  }
}

void LaunchJoin::retire_graphs(JoinClock::time_point now) {
  retire_graphs_while(
      [&](JoinClock::time_point last_work) { return now - last_work >= limits_.graph_quiet_for; });
}

void LaunchJoin::add_launch(const Launch& launch, JoinClock::time_point now) {
  ++counts_.launches;
  Key key{launch.pid, launch.correlation_id};
  if (launches_.contains(key)) {
    ++counts_.duplicate_launches;
    return;
  }
  if (launches_.size() >= limits_.max_launches) {
    // Full: the oldest joined graph launch makes room; with no kernel for a while, it is done.
    uint64_t retired = counts_.graphs_retired;
    retire_graphs_while([&](JoinClock::time_point) { return counts_.graphs_retired == retired; });
  }
  if (launches_.size() >= limits_.max_launches) {
    ++counts_.over_capacity;
    ++counts_.unmatched_launches;
    return;
  }
  PendingLaunch pending{launch, now, false, false, now};
  auto join_waiting_work = [&](uint32_t id) {
    auto [first, last] = pending_work_.equal_range({launch.pid, id});
    for (auto it = first; it != last; ++it) {
      join(pending, it->second.work);
      pending.joined = true;
    }
    pending_work_.erase(first, last);
  };
  join_waiting_work(launch.correlation_id);
  if (launch.nested_correlation_id != 0) join_waiting_work(launch.nested_correlation_id);
  if (pending.joined && !launch.graph) return;
  bool has_kernels = pending.joined;
  pending.joined = false;  // joined_graph() marks both its entries and queues it
  launches_.emplace(key, pending);
  if (launch.nested_correlation_id != 0) {
    PendingLaunch alias = pending;
    alias.alias = true;
    launches_.emplace(Key{launch.pid, launch.nested_correlation_id}, alias);
  }
  if (has_kernels) joined_graph(launch, now);
}

void LaunchJoin::add_work(const GpuWork& work, JoinClock::time_point now) {
  ++counts_.work;
  auto found = launches_.find({work.pid, work.correlation_id});
  if (found != launches_.end()) {
    join(found->second, work);
    if (found->second.launch.graph) {
      joined_graph(found->second.launch, now);  // both its entries stay for more kernels
    } else {
      forget_launch(found->second.launch);
    }
    return;
  }
  if (pending_work_.size() >= limits_.max_work) {
    ++counts_.over_capacity;
    give_up_work(work);
    return;
  }
  pending_work_.emplace(Key{work.pid, work.correlation_id}, PendingWork{work, now});
}

void LaunchJoin::expire_where(const std::function<bool(JoinClock::time_point, int)>& expired) {
  for (auto it = launches_.begin(); it != launches_.end();) {
    if (!expired(it->second.since, it->first.pid)) {
      ++it;
      continue;
    }
    if (!it->second.joined && !it->second.alias) ++counts_.unmatched_launches;
    it = launches_.erase(it);
  }
  for (auto it = pending_work_.begin(); it != pending_work_.end();) {
    if (!expired(it->second.since, it->first.pid)) {
      ++it;
      continue;
    }
    give_up_work(it->second.work);
    it = pending_work_.erase(it);
  }
}

size_t LaunchJoin::pending_launches() const {
  return static_cast<size_t>(std::count_if(launches_.begin(), launches_.end(),
                                           [](const auto& entry) { return !entry.second.alias; }));
}

void LaunchJoin::finish() {
  expire_where([](JoinClock::time_point, int) { return true; });
  joined_graphs_.clear();
}

std::vector<JoinedWork> LaunchJoin::take_joined() { return std::exchange(joined_, {}); }

}  // namespace dormant::profilers::gpu
