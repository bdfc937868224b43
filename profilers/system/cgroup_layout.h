// Where the cgroup hierarchies are mounted, as /proc/self/mountinfo says: cgroup v1, v2 or both,
// and the hierarchy in which `perf -G` looks cgroups up.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace dormant::profilers::system {

enum class CgroupVersion {
  kV1,      // controller hierarchies only, no cgroup2
  kV2,      // cgroup2 only
  kHybrid,  // v1 controller hierarchies plus a cgroup2 hierarchy (systemd's "hybrid" mode)
};
std::string_view to_string(CgroupVersion version);

struct CgroupMount {
  std::filesystem::path mount_point;  // "/sys/fs/cgroup/memory"
  std::string root = "/";             // the cgroup shown at the mount point; not "/" in containers
};

struct CgroupLayout {
  CgroupVersion version = CgroupVersion::kV2;
  std::optional<CgroupMount> unified;  // the first cgroup2 mount
  // The first v1 hierarchy carrying each controller we read (cpu and cpuacct are often one).
  std::optional<CgroupMount> perf_event;
  std::optional<CgroupMount> cpuacct;
  std::optional<CgroupMount> memory;

  // The hierarchy in which `perf -G NAME` looks NAME up, chosen as perf chooses it: the v1
  // perf_event hierarchy when one is mounted, else cgroup2 (where perf_event is always active).
  // nullopt: v1 without perf_event, so -G cannot work.
  std::optional<CgroupMount> perf_hierarchy() const;
  bool perf_uses_unified() const { return !perf_event && unified; }
};

// Reads the cgroup mounts out of /proc/PID/mountinfo text. A parse error names the bad line; an
// unavailable error says that no cgroup filesystem is mounted.
Result<CgroupLayout> parse_cgroup_layout(std::string_view mountinfo);
Result<CgroupLayout> detect_cgroup_layout(
    const std::filesystem::path& mountinfo = "/proc/self/mountinfo");

// "hybrid (cgroup2 at /sys/fs/cgroup/unified); perf -G names cgroups under /sys/fs/cgroup/unified".
std::string describe(const CgroupLayout& layout);

}  // namespace dormant::profilers::system
