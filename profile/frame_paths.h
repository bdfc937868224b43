// A frame's place in a flamegraph as one number: a hash of the names from the root to it. Frames of
// two profiles at the same place share a path whatever their tables' string ids, which is what a
// differential flamegraph compares.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "profile/stack_table.h"

namespace dormant::profile {

inline constexpr uint64_t kRootPath = 0x9e3779b97f4a7c15ULL;

// Containers and process names are places of their own: a function named like a process is not
// at the process's place.
uint64_t child_path(uint64_t parent, std::string_view name, bool is_process);

// How many samples of a table pass through each place (inclusive counts).
class PathCounts {
 public:
  explicit PathCounts(const StackTable& table);

  uint64_t at(uint64_t path) const;
  uint64_t total() const { return total_; }

 private:
  std::unordered_map<uint64_t, uint64_t> counts_;
  uint64_t total_ = 0;
};

}  // namespace dormant::profile
