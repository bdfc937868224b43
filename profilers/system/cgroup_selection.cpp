#include "profilers/system/cgroup_selection.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "inventory/container_cgroups.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;
using inventory::docker_container_id;

bool inside_docker_container(std::string_view name) {
  for (size_t end = name.find('/');; end = name.find('/', end + 1)) {
    if (docker_container_id(name.substr(0, end))) return true;
    if (end == std::string_view::npos) return false;
  }
}

// The same cgroup, or one is an ancestor of the other.
bool nested(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (b.size() == a.size() || b[a.size()] == '/');
}

bool eligible(const CgroupUsage& cgroup) {
  if (cgroup.name.empty() || cgroup.name.find(',') != std::string::npos) return false;
  return cgroup.subtree_processes > 0 &&
         (cgroup.processes > 0 || docker_container_id(cgroup.name).has_value());
}

bool better(const CgroupPick& a, const CgroupPick& b) {
  return a.score != b.score ? a.score > b.score : a.name < b.name;
}

// The eligible cgroups scored as select_cgroups() documents, best first.
std::vector<CgroupPick> rank(const std::vector<CgroupUsage>& cgroups) {
  std::vector<CgroupPick> ranked;
  uint64_t max_cpu = 0;
  uint64_t max_memory = 0;
  for (const CgroupUsage& cgroup : cgroups) {
    if (!eligible(cgroup)) continue;
    max_cpu = std::max(max_cpu, cgroup.cpu_ns);
    max_memory = std::max(max_memory, cgroup.memory_bytes);
    ranked.push_back({cgroup.name, cgroup.cpu_ns, cgroup.memory_bytes, 0,
                      docker_container_id(cgroup.name).has_value()});
  }
  auto fraction = [](uint64_t value, uint64_t max) {
    return max == 0 ? 0.0 : static_cast<double>(value) / static_cast<double>(max);
  };
  for (CgroupPick& pick : ranked) {
    pick.score = 10 * fraction(pick.cpu_ns, max_cpu) + fraction(pick.memory_bytes, max_memory);
  }
  std::sort(ranked.begin(), ranked.end(), better);
  return ranked;
}

template <typename Wanted>
void take_best(const std::vector<CgroupPick>& ranked, size_t count, Wanted wanted,
               std::vector<CgroupPick>& picks) {
  size_t taken = 0;
  for (const CgroupPick& candidate : ranked) {
    if (taken == count) return;
    if (!wanted(candidate)) continue;
    bool overlaps = std::any_of(picks.begin(), picks.end(), [&](const CgroupPick& pick) {
      return nested(pick.name, candidate.name);
    });
    if (overlaps) continue;
    picks.push_back(candidate);
    ++taken;
  }
}

// list_cgroups in the hierarchy `layout` makes perf use, then select_cgroups.
Result<std::vector<CgroupPick>> choose_in(const CgroupLayout& layout, const CgroupLimits& limits,
                                          const fs::path& fs_root) {
  auto cgroups = list_cgroups(layout, fs_root);
  if (!cgroups) return cgroups.error();
  std::vector<CgroupPick> picks = select_cgroups(*cgroups, limits);
  spdlog::debug("cgroups under {}: {} with processes, {} picked",
                layout.perf_hierarchy()->mount_point.string(), cgroups->size(), picks.size());
  return picks;
}

}  // namespace

CgroupLimits cgroup_limits_of(const ProfilingTarget& target) {
  CgroupLimits limits;
  limits.max_cgroups = static_cast<size_t>(std::max(0, target.max_cgroups));
  limits.max_docker_containers = static_cast<size_t>(std::max(0, target.max_docker_containers));
  return limits;
}

std::vector<CgroupPick> select_cgroups(const std::vector<CgroupUsage>& cgroups,
                                       const CgroupLimits& limits) {
  std::vector<CgroupPick> ranked = rank(cgroups);
  std::vector<CgroupPick> picks;
  bool containers_apart = limits.max_docker_containers > 0;
  take_best(
      ranked, limits.max_docker_containers,
      [](const CgroupPick& candidate) { return candidate.docker_container; }, picks);
  size_t others = limits.max_cgroups > picks.size() ? limits.max_cgroups - picks.size() : 0;
  take_best(
      ranked, others,
      [&](const CgroupPick& candidate) {
        return !containers_apart || !inside_docker_container(candidate.name);
      },
      picks);
  std::sort(picks.begin(), picks.end(), better);
  return picks;
}

Result<std::vector<CgroupPick>> choose_perf_cgroups(const CgroupLimits& limits,
                                                    const fs::path& fs_root) {
  auto layout = detect_cgroup_layout(fs_root / "proc/self/mountinfo");
  if (!layout) return layout.error();
  return choose_in(*layout, limits, fs_root);
}

Result<std::vector<CgroupPick>> choose_unified_cgroups(const CgroupLimits& limits,
                                                       const fs::path& fs_root) {
  auto layout = detect_cgroup_layout(fs_root / "proc/self/mountinfo");
  if (!layout) return layout.error();
  if (!layout->unified) {
    return Error(ErrorKind::kUnavailable,
                 "no cgroup2 hierarchy is mounted (" + describe(*layout) +
                     "), and cgroup v2 ids are what the eBPF sampler filters on");
  }
  CgroupLayout unified_only = *layout;
  unified_only.perf_event.reset();  // which makes list_cgroups walk the cgroup2 hierarchy
  auto picks = choose_in(unified_only, limits, fs_root);
  if (!picks) return picks.error();
  const fs::path mount = fs_root / layout->unified->mount_point.relative_path();
  std::erase_if(*picks, [&](CgroupPick& pick) {
    struct stat info {};
    if (::stat((mount / pick.name).c_str(), &info) != 0) return true;  // removed meanwhile
    pick.id = info.st_ino;
    return false;
  });
  return picks;
}

std::string describe(const CgroupPick& pick) {
  return fmt::format("{} (cpu {:.1f} s, memory {} MB, score {:.2f}{})", pick.name,
                     static_cast<double>(pick.cpu_ns) / 1e9, pick.memory_bytes >> 20, pick.score,
                     pick.docker_container ? ", docker container" : "");
}

Result<std::vector<CgroupPick>> cgroups_to_profile(std::string_view profiler,
                                                   Result<std::vector<CgroupPick>> chosen) {
  const std::string skipped = std::string(profiler) + " skipped: ";
  if (!chosen) return Error(ErrorKind::kUnavailable, skipped + chosen.error().message());
  if (chosen->empty()) {
    return Error(ErrorKind::kUnavailable,
                 skipped +
                     "--perf-use-cgroups found no cgroup with processes to profile (it never "
                     "falls back to the whole host)");
  }
  for (const auto& pick : *chosen) spdlog::info("{}: cgroup {}", profiler, describe(pick));
  return chosen;
}

}  // namespace dormant::profilers::system
