// GPU work whose launch came without its stack (the library's launch-rate bound) is given the
// stacks that the same thread's taken launches of the same kernel, on the same device and stream,
// had in the same snapshot, in proportion to their time there; with none, one frame says so.
// The thread's taken launches are a random sample of its launches, so their stacks share out the
// rest's time as the rest's own stacks would, and the GPU time stays whole.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dormant::profilers::gpu {

struct WorkGroup {
  int pid = 0;
  int tid = 0;
  uint32_t what = 0;   // the kernel (GpuWork::what)
  uint32_t where = 0;  // its device and stream (GpuWork::where)
  bool operator==(const WorkGroup&) const = default;
};

class UntakenStacks {
 public:
  // `ns` of the group's work under the stack `key`, from a launch whose stack was taken.
  void taken(const WorkGroup& group, const std::string& key, uint64_t ns);
  // `ns` of the group's work from launches without stacks; `alone` is its key where the group
  // has no taken launch.
  void untaken(const WorkGroup& group, std::string alone, uint64_t ns);
  // The untaken work shared out: each key with the time it is given. Starts the next snapshot.
  std::vector<std::pair<std::string, uint64_t>> share_out();

 private:
  struct GroupHash {
    size_t operator()(const WorkGroup& group) const {
      uint64_t a = (uint64_t(uint32_t(group.pid)) << 32) | uint32_t(group.tid);
      uint64_t b = (uint64_t{group.what} << 32) | group.where;
      return std::hash<uint64_t>()(a ^ (b * 0x9e3779b97f4a7c15ull));
    }
  };
  struct Untaken {
    std::string alone;
    uint64_t ns = 0;
  };
  std::unordered_map<WorkGroup, std::unordered_map<std::string, uint64_t>, GroupHash> taken_;
  std::unordered_map<WorkGroup, Untaken, GroupHash> untaken_;
};

}  // namespace dormant::profilers::gpu
