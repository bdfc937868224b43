// The process images of one runtime the sampler walks (CPython, HotSpot, V8): for each, what its
// frames are named by (Image), and its walk in the sampler's map under {pid, generation}. A newer
// image of a pid takes the older one's place; generations only grow. Not thread-safe: its owner
// holds the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <bpf/bpf.h>
#include <sys/types.h>

#include "bpf/unwind.h"

namespace dormant::profilers::ebpf {

template <typename Image>
class ProcessWalks {
 public:
  // `map_fd`: the sampler's map, which outlives this object. `max_images` 0: no limit.
  ProcessWalks(int map_fd, size_t max_images) : map_fd_(map_fd), max_images_(max_images) {}

  // Whether an image of `pid` at `generation` would be new: none known, or an older one.
  bool is_newer(pid_t pid, uint32_t generation) const {
    auto known = images_.find(pid);
    return known == images_.end() || known->second.first < generation;
  }
  // Whether a pid not walked yet would pass the limit.
  bool is_full(pid_t pid) const {
    return max_images_ != 0 && !images_.contains(pid) && images_.size() >= max_images_;
  }
  // Gives the sampler `walk` for the image, in place of the pid's older one; false, with nothing
  // changed, when the map has no room. True for a pid not walked before is `*added`.
  template <typename Walk>
  bool put(pid_t pid, uint32_t generation, const Walk& walk, Image image, bool* added) {
    dormant_unwind_process_key key{static_cast<uint32_t>(pid), generation};
    if (bpf_map_update_elem(map_fd_, &key, &walk, BPF_ANY) != 0) return false;
    auto known = images_.find(pid);
    *added = known == images_.end();
    if (!*added) remove(pid, known->second.first);
    images_[pid] = {generation, std::move(image)};
    return true;
  }
  void forget(const std::vector<pid_t>& pids) {
    for (pid_t pid : pids) {
      auto known = images_.find(pid);
      if (known == images_.end()) continue;
      remove(pid, known->second.first);
      images_.erase(known);
    }
  }
  const Image* find(pid_t pid, uint32_t generation) const {
    auto known = images_.find(pid);
    if (known == images_.end() || known->second.first != generation) return nullptr;
    return &known->second.second;
  }

 private:
  void remove(pid_t pid, uint32_t generation) {
    dormant_unwind_process_key key{static_cast<uint32_t>(pid), generation};
    (void)bpf_map_delete_elem(map_fd_, &key);
  }

  const int map_fd_;
  const size_t max_images_;
  std::map<pid_t, std::pair<uint32_t, Image>> images_;
};

// The last few reasons a runtime's processes are not walked, "pid N: why", for the header.
class RecentReasons {
 public:
  static constexpr size_t kMax = 8;
  void add(pid_t pid, const std::string& why) {
    reasons_.push_back("pid " + std::to_string(pid) + ": " + why);
    if (reasons_.size() > kMax) reasons_.pop_front();
  }
  const std::deque<std::string>& list() const { return reasons_; }

 private:
  std::deque<std::string> reasons_;
};

}  // namespace dormant::profilers::ebpf
