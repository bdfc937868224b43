// Joins GPU work (kernels, copies) to the launches that submitted it, on (pid, correlation id),
// whichever arrives first. A graph launch submits many kernels under one id: each gets the
// launch's stack, and the launch is retired once its kernels are in (none for `graph_quiet_for`),
// or, when the table is full, oldest first. Bounded: what waits longer than `pending_for` (or
// beyond the caps) is given up and counted; work given up is still handed out, without a launch,
// so that no GPU time is lost.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dormant::profilers::gpu {

using JoinClock = std::chrono::steady_clock;

struct Launch {
  int pid = 0;
  int tid = 0;  // the launching thread
  uint32_t correlation_id = 0;
  uint32_t nested_correlation_id = 0;  // another id its kernels may carry; 0: none
  int32_t cbid = 0;
  uint32_t stack = 0;  // the caller's id for the launching stack
  bool graph = false;  // may submit any number of pieces of work (a graph, a batch of copies)
};

struct GpuWork {
  int pid = 0;
  uint32_t correlation_id = 0;
  uint32_t what = 0;   // the caller's id for the GPU frame (a kernel's name, "memcpy HtoD")
  uint32_t where = 0;  // the caller's id for its device, stream and graph
  uint64_t duration_ns = 0;
};

struct JoinedWork {
  GpuWork work;
  bool launched = false;  // false: its launch was never seen
  int32_t cbid = 0;
  uint32_t stack = 0;
  int tid = 0;  // the launching thread
};

struct JoinCounts {
  uint64_t launches = 0;
  uint64_t work = 0;
  uint64_t joined = 0;
  uint64_t unmatched_launches = 0;  // never joined to any work before they expired
  uint64_t unmatched_work = 0;      // handed out without a launch
  uint64_t duplicate_launches = 0;  // a second launch under an id still pending
  uint64_t over_capacity = 0;       // entries given up early because a cap was reached
  uint64_t graphs_retired = 0;      // graph launches whose kernels were in
  uint64_t past_bound = 0;          // work handed out as time alone: past max_handed_out
};

struct JoinLimits {
  std::chrono::milliseconds pending_for{5000};
  // A graph launch that has joined kernels and then none for this long has all of them.
  std::chrono::milliseconds graph_quiet_for{1000};
  size_t max_launches = 65536;
  size_t max_work = 65536;
  // Pieces of work handed out between two take_joined(); past it, only their time is kept.
  size_t max_handed_out = 1'000'000;
};

class LaunchJoin {
 public:
  explicit LaunchJoin(JoinLimits limits = {}) : limits_(limits) {}

  void add_launch(const Launch& launch, JoinClock::time_point now);
  void add_work(const GpuWork& work, JoinClock::time_point now);

  // Gives up on what has waited past `pending_for` at `now`, and on everything of the processes
  // `gone` says have exited.
  template <typename Gone>
  void expire(JoinClock::time_point now, Gone gone) {
    expire_where([&](JoinClock::time_point since, int pid) {
      return now - since >= limits_.pending_for || gone(pid);
    });
  }
  // Retires the graph launches whose kernels are in at `now`. Cheap: call it often.
  void retire_graphs(JoinClock::time_point now);
  // Gives up on everything still pending.
  void finish();

  // The work joined (or given up) since the previous call, and the time of the work past
  // max_handed_out in that while.
  std::vector<JoinedWork> take_joined();
  uint64_t take_ns_past_bound() { return std::exchange(ns_past_bound_, 0); }
  const JoinCounts& counts() const { return counts_; }
  // Launches and work waiting for their other half.
  size_t pending_launches() const;
  size_t pending_work() const { return pending_work_.size(); }

 private:
  struct Key {
    int pid;
    uint32_t correlation_id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<uint64_t>()((uint64_t(uint32_t(key.pid)) << 32) | key.correlation_id);
    }
  };
  struct PendingLaunch {
    Launch launch;
    JoinClock::time_point since;
    bool joined = false;
    bool alias = false;               // the entry under the nested correlation id
    JoinClock::time_point last_work;  // a joined graph launch's latest kernel
  };
  struct PendingWork {
    GpuWork work;
    JoinClock::time_point since;
  };

  void join(const PendingLaunch& launch, const GpuWork& work);
  void joined_graph(const Launch& launch, JoinClock::time_point now);
  // Retires joined graph launches from the oldest while `retire` says so of one's latest kernel.
  void retire_graphs_while(const std::function<bool(JoinClock::time_point)>& retire);
  void forget_launch(Launch launch);  // a copy: the entry it erases may hold the one given
  void give_up_work(const GpuWork& work);
  void hand_out(const JoinedWork& joined);
  void expire_where(const std::function<bool(JoinClock::time_point, int)>& expired);

  JoinLimits limits_;
  std::unordered_map<Key, PendingLaunch, KeyHash> launches_;
  std::unordered_multimap<Key, PendingWork, KeyHash> pending_work_;
  // Joined graph launches, oldest first, each with the time it was queued (see
  // retire_graphs_while).
  std::deque<std::pair<Key, JoinClock::time_point>> joined_graphs_;
  std::vector<JoinedWork> joined_;
  uint64_t ns_past_bound_ = 0;
  JoinCounts counts_;
};

}  // namespace dormant::profilers::gpu
