#include "profilers/gpu/launch_join.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace dormant::profilers::gpu {

void LaunchJoin::join(const PendingLaunch& pending, const GpuWork& work) {
  joined_.push_back({work, true, pending.launch.cbid, pending.launch.stack});
  ++counts_.joined;
}

void LaunchJoin::forget_launch(Launch launch) {
  launches_.erase({launch.pid, launch.correlation_id});
  if (launch.nested_correlation_id != 0) {
    launches_.erase({launch.pid, launch.nested_correlation_id});
  }
}

void LaunchJoin::give_up_work(const GpuWork& work) {
  joined_.push_back({work, false, 0, 0});
  ++counts_.unmatched_work;
}

void LaunchJoin::add_launch(const Launch& launch, JoinClock::time_point now) {
  ++counts_.launches;
  Key key{launch.pid, launch.correlation_id};
  if (launches_.contains(key)) {
    ++counts_.duplicate_launches;
    return;
  }
  if (launches_.size() >= limits_.max_launches) {
    ++counts_.over_capacity;
    ++counts_.unmatched_launches;
    return;
  }
  PendingLaunch pending{launch, now};
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
  launches_.emplace(key, pending);
  if (launch.nested_correlation_id != 0) {
    PendingLaunch alias = pending;
    alias.alias = true;
    launches_.emplace(Key{launch.pid, launch.nested_correlation_id}, alias);
  }
}

void LaunchJoin::add_work(const GpuWork& work, JoinClock::time_point now) {
  ++counts_.work;
  auto found = launches_.find({work.pid, work.correlation_id});
  if (found != launches_.end()) {
    join(found->second, work);
    if (found->second.launch.graph) {
      // Both entries of a graph launch stay for its other kernels; both are joined now.
      const Launch& launch = found->second.launch;
      for (uint32_t id : {launch.correlation_id, launch.nested_correlation_id}) {
        auto entry = launches_.find({launch.pid, id});
        if (entry != launches_.end()) entry->second.joined = true;
      }
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
}

std::vector<JoinedWork> LaunchJoin::take_joined() { return std::exchange(joined_, {}); }

}  // namespace dormant::profilers::gpu
