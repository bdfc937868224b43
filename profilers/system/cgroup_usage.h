// One walk of a cgroup hierarchy: every cgroup with processes in its subtree, with the CPU time
// and memory it has used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "profilers/system/cgroup_layout.h"

namespace dormant::profilers::system {

struct CgroupUsage {
  std::string name;              // relative to the perf hierarchy, no leading '/': the -G name
  uint64_t cpu_ns = 0;           // CPU time since the cgroup was created, descendants included
  uint64_t memory_bytes = 0;     // memory charged now, descendants included
  size_t processes = 0;          // in this cgroup itself
  size_t subtree_processes = 0;  // in this cgroup and every cgroup below it
};

// Every cgroup below the root of the perf hierarchy with a process in its subtree, parents before
// their children. CPU comes from cpu.stat usage_usec (cgroup2) or else cpuacct.usage in the v1
// cpuacct hierarchy at the same name; memory from memory.current (cgroup2) or else
// memory.usage_in_bytes in the v1 memory hierarchy. A missing file counts as 0. Mount points are
// looked up under `fs_root`, so tests can point this at a fake tree.
Result<std::vector<CgroupUsage>> list_cgroups(const CgroupLayout& layout,
                                              const std::filesystem::path& fs_root = "/");

}  // namespace dormant::profilers::system
