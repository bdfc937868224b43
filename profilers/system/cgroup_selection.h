// Which cgroups a profiler watches with --perf-use-cgroups: the busiest, ranked and picked from
// one walk of the hierarchy perf uses, or of cgroup2 for the eBPF sampler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/profiling_settings.h"
#include "common/result.h"
#include "profilers/system/cgroup_usage.h"

namespace dormant::profilers::system {

struct CgroupLimits {
  size_t max_cgroups = 50;           // --perf-max-cgroups
  size_t max_docker_containers = 0;  // --perf-max-docker-containers
};

// The target's limits (a negative one counts as 0).
CgroupLimits cgroup_limits_of(const ProfilingTarget& target);

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

// "system.slice/x.service (cpu 12.0 s, memory 34 MB, score 10.20, docker container)".
std::string describe(const CgroupPick& pick);

// A choice as `profiler` takes it for --perf-use-cgroups: each pick logged as "PROFILER: cgroup
// …"; an unavailable "PROFILER skipped: …" error when choosing failed or picked nothing, since a
// cgroup target never widens to the whole host.
Result<std::vector<CgroupPick>> cgroups_to_profile(std::string_view profiler,
                                                   Result<std::vector<CgroupPick>> chosen);

}  // namespace dormant::profilers::system
