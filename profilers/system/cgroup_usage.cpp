#include "profilers/system/cgroup_usage.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/text.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;

// Deeper than any real hierarchy (Kubernetes nests about six levels); stops a runaway walk.
constexpr int kMaxDepth = 32;

// ---- reading cgroup files; a missing or unreadable file is "nothing there" ----

std::optional<uint64_t> parse_u64(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
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

}  // namespace

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

}  // namespace dormant::profilers::system
