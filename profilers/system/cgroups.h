// Cgroup targeting for `perf record -G`: where the cgroup hierarchies are mounted, which cgroups
// hold busy processes, and which of them perf should watch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

// ---- Layout: what /proc/self/mountinfo says ----

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

// ---- Usage: one walk of the perf hierarchy ----

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

// ---- Selection ----

struct CgroupLimits {
  size_t max_cgroups = 50;           // --perf-max-cgroups
  size_t max_docker_containers = 0;  // --perf-max-docker-containers
};

struct CgroupPick {
  std::string name;
  uint64_t cpu_ns = 0;
  uint64_t memory_bytes = 0;
  double score = 0;
  bool docker_container = false;
  uint64_t id = 0;  // the cgroup v2 id (its directory's inode): set by choose_unified_cgroups
};

// The cgroups perf should watch, best score first; empty when nothing qualifies (the caller must
// then skip perf, never fall back to -a).
//
// Eligible: a cgroup that holds processes itself, or a docker container with processes anywhere
// below it. Intermediate cgroups (system.slice, docker, kubepods) are represented by the
// cgroups below them that actually run something, which is what makes a pick informative.
//
// Score = 10 * cpu_ns / max_cpu_ns + memory_bytes / max_memory_bytes, the maxima taken over the
// eligible cgroups (a term is 0 when its maximum is). Each metric becomes a fraction of the
// busiest cgroup's, so neither unit nor uptime matters, and CPU weighs 10x: the busiest CPU user
// scores at least 10, memory adds at most 1, so memory can only reorder cgroups whose CPU differs
// by less than a tenth of the busiest's. CPU is cumulative, so long-lived busy cgroups rank first.
//
// Never picks a cgroup together with its ancestor or descendant: a perf cgroup event counts the
// whole subtree, so `-G a,a/b` would record every sample of a/b twice. Walking down the ranking,
// a candidate nested with an earlier pick is skipped.
//
// With max_docker_containers = M > 0, the top M docker containers (v1 `docker/<id>`, systemd
// `…/docker-<id>.scope`) are picked individually first; the other max_cgroups - M slots (none if
// M >= max_cgroups) go to cgroups outside any container. With M = 0, containers compete with
// everything else for max_cgroups slots. Names perf cannot take (a ',' in them) are skipped.
std::vector<CgroupPick> select_cgroups(const std::vector<CgroupUsage>& cgroups,
                                       const CgroupLimits& limits);

// detect_cgroup_layout(fs_root/proc/self/mountinfo) + list_cgroups + select_cgroups.
Result<std::vector<CgroupPick>> choose_perf_cgroups(const CgroupLimits& limits,
                                                    const std::filesystem::path& fs_root = "/");

// The same choice made in the cgroup2 hierarchy, whatever perf would use, each pick with its id:
// for the eBPF sampler, which filters on cgroup v2 ids. An unavailable error when no cgroup2
// hierarchy is mounted.
Result<std::vector<CgroupPick>> choose_unified_cgroups(const CgroupLimits& limits,
                                                       const std::filesystem::path& fs_root = "/");

std::vector<std::string> perf_cgroup_names(const std::vector<CgroupPick>& picks);

// "system.slice/x.service (cpu 12.0 s, memory 34 MB, score 10.20, docker container)".
std::string describe(const CgroupPick& pick);

// A choice as `profiler` takes it for --perf-use-cgroups: each pick logged as "PROFILER: cgroup
// …"; an unavailable "PROFILER skipped: …" error when choosing failed or picked nothing, since a
// cgroup target never widens to the whole host.
Result<std::vector<CgroupPick>> cgroups_to_profile(std::string_view profiler,
                                                   Result<std::vector<CgroupPick>> chosen);

// perf pairs the k-th -G name with the k-th event and rejects more names than events, so watching
// N cgroups takes the event N times: {"-e", event, …, "-e", event, "-G", "a,b,…"}. Empty for no
// names. perf accepts -G only together with -a (per-CPU mode).
std::vector<std::string> perf_cgroup_arguments(std::string_view event,
                                               const std::vector<std::string>& names);

// The 64-hex docker container id when `cgroup_name` is a container's own cgroup:
// "docker/<id>" (cgroupfs driver) or "…/docker-<id>.scope" (systemd driver).
std::optional<std::string> docker_container_id(std::string_view cgroup_name);

// ---- One process's cgroups: /proc/PID/cgroup ----

struct ProcessCgroups {
  std::optional<std::string> unified;  // the path on the "0::" line
  // v1: each controller ("cpu", "memory", "name=systemd"…) → the path in its hierarchy.
  std::map<std::string, std::string, std::less<>> v1;
};

Result<ProcessCgroups> parse_process_cgroups(std::string_view text);
Result<ProcessCgroups> read_process_cgroups(pid_t pid = 0);  // 0 = this process

}  // namespace dormant::profilers::system
