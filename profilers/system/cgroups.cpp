#include "profilers/system/cgroups.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "common/atomic_file.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;

// Deeper than any real hierarchy (Kubernetes nests about six levels); stops a runaway walk.
constexpr int kMaxDepth = 32;

constexpr std::array<std::string_view, 15> kV1Controllers = {
    "cpuset",     "cpu",      "cpuacct", "blkio", "memory", "devices", "freezer", "net_cls",
    "perf_event", "net_prio", "hugetlb", "pids",  "rdma",   "misc",    "debug"};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

bool contains(const std::vector<std::string_view>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// mountinfo writes space, tab, newline and backslash in paths as \040, \011, \012 and \134.
std::string unescape_mount_path(std::string_view field) {
  std::string path;
  for (size_t i = 0; i < field.size(); ++i) {
    bool octal = field[i] == '\\' && i + 3 < field.size() &&
                 std::all_of(field.begin() + i + 1, field.begin() + i + 4,
                             [](char c) { return c >= '0' && c <= '7'; });
    if (octal) {
      path += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                (field[i + 3] - '0'));
      i += 3;
    } else {
      path += field[i];
    }
  }
  return path;
}

struct MountEntry {
  std::string root;
  std::string mount_point;
  std::string_view fstype;
  std::vector<std::string_view> super_options;
};

// "36 25 0:31 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory": six
// fields, optional fields ended by "-", then type, source and the filesystem's own options.
std::optional<MountEntry> parse_mount_line(std::string_view line) {
  std::vector<std::string_view> fields = split(line, ' ');
  auto dash = std::find(fields.begin() + std::min<size_t>(6, fields.size()), fields.end(), "-");
  if (fields.size() < 10 || dash == fields.end() || fields.end() - dash < 4) return std::nullopt;
  MountEntry entry;
  entry.root = unescape_mount_path(fields[3]);
  entry.mount_point = unescape_mount_path(fields[4]);
  entry.fstype = dash[1];
  entry.super_options = split(dash[3], ',');
  return entry;
}

CgroupMount to_mount(const MountEntry& entry) { return {entry.mount_point, entry.root}; }

void remember_first(std::optional<CgroupMount>& slot, const MountEntry& entry) {
  if (!slot) slot = to_mount(entry);
}

bool binds_a_controller(const MountEntry& entry) {
  return std::any_of(
      kV1Controllers.begin(), kV1Controllers.end(),
      [&](std::string_view controller) { return contains(entry.super_options, controller); });
}

// ---- reading cgroup files; a missing or unreadable file is "nothing there" ----

std::optional<uint64_t> parse_u64(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\n");
  size_t end = text.find_last_not_of(" \t\n");
  if (begin == std::string_view::npos) return std::nullopt;
  text = text.substr(begin, end - begin + 1);
  uint64_t value = 0;
  auto [stop, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || stop != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> read_u64(const fs::path& file) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  return parse_u64(*text);
}

// The value of "KEY VALUE" in a flat-keyed file such as cpu.stat.
std::optional<uint64_t> read_keyed_u64(const fs::path& file, std::string_view key) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  for (std::string_view line : split(*text, '\n')) {
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ' ') {
      return parse_u64(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

size_t count_processes(const fs::path& cgroup_dir) {
  auto text = read_file(cgroup_dir / "cgroup.procs");
  if (!text) return 0;
  std::vector<std::string_view> lines = split(*text, '\n');
  return static_cast<size_t>(
      std::count_if(lines.begin(), lines.end(), [](std::string_view l) { return !l.empty(); }));
}

// Where list_cgroups finds each hierarchy, under the caller's filesystem root.
struct Hierarchies {
  fs::path perf;
  bool perf_is_unified = false;
  std::optional<fs::path> cpuacct;
  std::optional<fs::path> memory;
};

fs::path under(const fs::path& fs_root, const fs::path& mount_point) {
  return fs_root / mount_point.relative_path();
}

std::optional<fs::path> under(const fs::path& fs_root, const std::optional<CgroupMount>& mount) {
  if (!mount) return std::nullopt;
  return under(fs_root, mount->mount_point);
}

uint64_t cpu_ns(const Hierarchies& where, const std::string& name) {
  if (where.perf_is_unified) {
    if (auto usec = read_keyed_u64(where.perf / name / "cpu.stat", "usage_usec")) {
      return *usec * 1000;
    }
  }
  if (where.cpuacct) {
    if (auto ns = read_u64(*where.cpuacct / name / "cpuacct.usage")) return *ns;
  }
  return 0;
}

uint64_t memory_bytes(const Hierarchies& where, const std::string& name) {
  if (where.perf_is_unified) {
    if (auto bytes = read_u64(where.perf / name / "memory.current")) return *bytes;
  }
  if (where.memory) {
    if (auto bytes = read_u64(*where.memory / name / "memory.usage_in_bytes")) return *bytes;
  }
  return 0;
}

// The child cgroups of `dir`, sorted by name.
Result<std::vector<std::string>> child_cgroups(const fs::path& dir) {
  std::error_code error;
  fs::directory_iterator entries(dir, error);
  std::vector<std::string> names;
  for (; !error && entries != fs::directory_iterator(); entries.increment(error)) {
    std::error_code ignored;
    if (entries->is_directory(ignored) && !entries->is_symlink(ignored)) {
      names.push_back(entries->path().filename().string());
    }
  }
  if (error) return Error::from_errno("opendir(" + dir.string() + ")", error.value());
  std::sort(names.begin(), names.end());
  return names;
}

// Appends the cgroup `name` (empty: the root, which is not appended) and those below it that
// have processes in their subtree, parents first. Returns how many processes the subtree holds.
size_t walk(const Hierarchies& where, const std::string& name, int depth,
            std::vector<CgroupUsage>& found) {
  fs::path dir = where.perf / name;
  size_t own = count_processes(dir);
  size_t subtree = own;
  std::vector<CgroupUsage> below;
  if (depth < kMaxDepth) {
    auto children = child_cgroups(dir);
    // Cgroups come and go while we walk; one that vanished holds nothing.
    if (!children)
      spdlog::debug("cgroups: skipping below {}: {}", dir.string(), children.error().message());
    for (const std::string& child : children.value_or(std::vector<std::string>{})) {
      subtree += walk(where, name.empty() ? child : name + "/" + child, depth + 1, below);
    }
  } else {
    spdlog::debug("cgroups: not descending below {}: deeper than {} levels", dir.string(),
                  kMaxDepth);
  }
  if (!name.empty() && subtree > 0) {
    found.push_back({name, cpu_ns(where, name), memory_bytes(where, name), own, subtree});
  }
  found.insert(found.end(), std::make_move_iterator(below.begin()),
               std::make_move_iterator(below.end()));
  return subtree;
}

// ---- selection ----

bool is_container_id(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

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

}  // namespace

std::string_view to_string(CgroupVersion version) {
  switch (version) {
    case CgroupVersion::kV1:
      return "v1";
    case CgroupVersion::kV2:
      return "v2";
    case CgroupVersion::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

std::optional<CgroupMount> CgroupLayout::perf_hierarchy() const {
  return perf_event ? perf_event : unified;
}

Result<CgroupLayout> parse_cgroup_layout(std::string_view mountinfo) {
  CgroupLayout layout;
  bool has_v1_controllers = false;
  size_t line_number = 0;
  for (std::string_view line : split(mountinfo, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    std::optional<MountEntry> entry = parse_mount_line(line);
    if (!entry) {
      return Error::parse("mountinfo line " + std::to_string(line_number) +
                          " is not in the kernel's format: '" + std::string(line) + "'");
    }
    if (entry->fstype == "cgroup2") {
      remember_first(layout.unified, *entry);
    } else if (entry->fstype == "cgroup") {
      has_v1_controllers |= binds_a_controller(*entry);
      if (contains(entry->super_options, "perf_event")) remember_first(layout.perf_event, *entry);
      if (contains(entry->super_options, "cpuacct")) remember_first(layout.cpuacct, *entry);
      if (contains(entry->super_options, "memory")) remember_first(layout.memory, *entry);
    }
  }
  if (!has_v1_controllers && !layout.unified) {
    return Error(ErrorKind::kUnavailable,
                 "no cgroup filesystem is mounted: mount cgroup2 (mount -t cgroup2 none "
                 "/sys/fs/cgroup) or the v1 perf_event controller to profile by cgroup");
  }
  layout.version = !has_v1_controllers ? CgroupVersion::kV2
                   : layout.unified    ? CgroupVersion::kHybrid
                                       : CgroupVersion::kV1;
  return layout;
}

Result<CgroupLayout> detect_cgroup_layout(const fs::path& mountinfo) {
  auto text = read_file(mountinfo);
  if (!text) {
    return std::move(text).take_error().with_context(
        "cannot read the mount table to find the cgroup filesystems (is /proc mounted?)");
  }
  auto layout = parse_cgroup_layout(*text);
  if (!layout) return std::move(layout).take_error().with_context(mountinfo.string());
  return layout;
}

std::string describe(const CgroupLayout& layout) {
  std::string text(to_string(layout.version));
  if (layout.unified) text += " (cgroup2 at " + layout.unified->mount_point.string() + ")";
  std::optional<CgroupMount> perf = layout.perf_hierarchy();
  if (!perf) return text + "; no perf_event hierarchy, so perf -G cannot select cgroups";
  return text + "; perf -G names cgroups under " + perf->mount_point.string();
}

Result<std::vector<CgroupUsage>> list_cgroups(const CgroupLayout& layout, const fs::path& fs_root) {
  std::optional<CgroupMount> perf = layout.perf_hierarchy();
  if (!perf) {
    return Error(ErrorKind::kUnavailable,
                 "cgroup v1 is mounted without the perf_event controller, so perf -G cannot "
                 "select cgroups; mount it (mount -t cgroup -o perf_event none "
                 "/sys/fs/cgroup/perf_event) or run without --perf-use-cgroups");
  }
  Hierarchies where{under(fs_root, perf->mount_point), layout.perf_uses_unified(),
                    under(fs_root, layout.cpuacct), under(fs_root, layout.memory)};
  // Below the root a vanished directory is normal; the root itself must be there.
  if (auto top = child_cgroups(where.perf); !top) {
    return std::move(top).take_error().with_context("cannot list the cgroups perf -G can watch");
  }
  std::vector<CgroupUsage> found;
  walk(where, "", 0, found);
  return found;
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

namespace {

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

std::vector<std::string> perf_cgroup_names(const std::vector<CgroupPick>& picks) {
  std::vector<std::string> names;
  names.reserve(picks.size());
  for (const CgroupPick& pick : picks) names.push_back(pick.name);
  return names;
}

std::vector<std::string> perf_cgroup_arguments(std::string_view event,
                                               const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::vector<std::string> args;
  std::string joined;
  for (const std::string& name : names) {
    args.insert(args.end(), {"-e", std::string(event)});
    joined += (joined.empty() ? "" : ",") + name;
  }
  args.insert(args.end(), {"-G", joined});
  return args;
}

std::optional<std::string> docker_container_id(std::string_view cgroup_name) {
  size_t slash = cgroup_name.rfind('/');
  std::string_view leaf =
      slash == std::string_view::npos ? cgroup_name : cgroup_name.substr(slash + 1);
  constexpr std::string_view kPrefix = "docker-";
  constexpr std::string_view kSuffix = ".scope";
  if (leaf.starts_with(kPrefix) && leaf.ends_with(kSuffix)) {
    std::string_view id =
        leaf.substr(kPrefix.size(), leaf.size() - kPrefix.size() - kSuffix.size());
    if (is_container_id(id)) return std::string(id);
  }
  if (slash == std::string_view::npos || !is_container_id(leaf)) return std::nullopt;
  std::string_view parent = cgroup_name.substr(0, slash);
  size_t parent_slash = parent.rfind('/');
  std::string_view parent_leaf =
      parent_slash == std::string_view::npos ? parent : parent.substr(parent_slash + 1);
  if (parent_leaf == "docker") return std::string(leaf);
  return std::nullopt;
}

Result<ProcessCgroups> parse_process_cgroups(std::string_view text) {
  ProcessCgroups cgroups;
  for (std::string_view line : split(text, '\n')) {
    if (line.empty()) continue;
    // "HIERARCHY-ID:CONTROLLERS:PATH"; the path itself may hold ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return Error::parse("cgroup membership line is not 'ID:CONTROLLERS:PATH': '" +
                          std::string(line) + "'");
    }
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (controllers.empty()) {
      if (id == "0") cgroups.unified = path;
      continue;
    }
    for (std::string_view controller : split(controllers, ',')) {
      cgroups.v1.insert_or_assign(std::string(controller), path);
    }
  }
  return cgroups;
}

Result<ProcessCgroups> read_process_cgroups(pid_t pid) {
  std::string file = pid == 0 ? "/proc/self/cgroup" : "/proc/" + std::to_string(pid) + "/cgroup";
  auto text = read_file(file);
  if (!text) return text.error();
  auto cgroups = parse_process_cgroups(*text);
  if (!cgroups) return std::move(cgroups).take_error().with_context(file);
  return cgroups;
}

}  // namespace dormant::profilers::system
