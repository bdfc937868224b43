// Joined GPU work summed between two snapshots by what names it in the profile (process, thread,
// launch stack and API, kernel, device and stream), so that memory grows with the distinct stacks
// and not with the records: a program launching 20,000 kernels a second keeps every one's time
// under its own stack through a minute's snapshot. Bounded: at most `max_keys` sums, a process
// at most a quarter of them; a process's work past its share keeps its time, under its process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profilers/gpu/launch_join.h"

namespace dormant::profilers::gpu {

class JoinedTotals {
 public:
  explicit JoinedTotals(size_t max_keys = 262144) : max_keys_(max_keys) {}

  void add(const JoinedWork& joined);
  // The sums since the previous call, one JoinedWork each (correlation ids 0).
  std::vector<JoinedWork> take();
  // By process, the time of its work past the bound since the previous call.
  std::vector<std::pair<int, uint64_t>> take_past_bound();
  uint64_t records_past_bound() const { return records_past_bound_; }

 private:
  struct Key {
    int pid;
    int tid;
    bool launched;
    int32_t cbid;
    uint32_t stack;
    uint32_t what;
    uint32_t where;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };

  size_t max_keys_;
  std::unordered_map<Key, uint64_t, KeyHash> sums_;
  std::unordered_map<int, size_t> keys_by_pid_;
  std::unordered_map<int, uint64_t> past_bound_ns_;
  uint64_t records_past_bound_ = 0;
};

}  // namespace dormant::profilers::gpu
