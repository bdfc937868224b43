#include "profilers/system/cgroup_layout.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "common/text.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 15> kV1Controllers = {
    "cpuset",     "cpu",      "cpuacct", "blkio", "memory", "devices", "freezer", "net_cls",
    "perf_event", "net_prio", "hugetlb", "pids",  "rdma",   "misc",    "debug"};

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

}  // namespace dormant::profilers::system
