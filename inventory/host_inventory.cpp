#include "inventory/host_inventory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "inventory/process_cgroups.h"

#include "common/text.h"
#include "common/unique_fd.h"

namespace dormant::inventory {
namespace {

// /proc/<pid>/cgroup lists one line per hierarchy: a few hundred bytes, a few KiB on hosts with
// deep cgroup trees.
constexpr size_t kMaxCgroupFileBytes = 64 << 10;
constexpr size_t kMaxCommBytes = 64;

std::optional<pid_t> pid_of(const char* name) {
  if (*name == '\0') return std::nullopt;
  pid_t pid = 0;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || pid > 100'000'000) return std::nullopt;
    pid = pid * 10 + (*c - '0');
  }
  return pid > 0 ? std::optional(pid) : std::nullopt;
}

// A small file under the proc root; nullopt when it cannot be read (the process has exited).
std::optional<std::string> read_small(int proc_fd, const std::string& relative, size_t max_bytes) {
  UniqueFd fd(::openat(proc_fd, relative.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string content;
  char buffer[4096];
  while (content.size() < max_bytes) {
    ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) return content;
    content.append(buffer, static_cast<size_t>(got));
  }
  return std::nullopt;  // larger than any such file: not one
}

std::string printable(std::string_view text) {
  std::string shown(trim_back(text));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return shown;
}

auto sort_key(const InventoryContainer& entry) {
  const ContainerMetadata& c = entry.container;
  return std::tie(c.pod_namespace, c.pod_name, c.name, c.id);
}

}  // namespace

size_t wire_bytes(const InventoryContainer& entry) {
  // Member names, quotes, separators; every string twice its length (an escaped '"' or '\\').
  constexpr size_t kContainerMembers = 200;
  constexpr size_t kProcessMembers = 48;
  auto text = [](const std::optional<std::string>& value) { return value ? 2 * value->size() : 0; };
  const ContainerMetadata& c = entry.container;
  size_t bytes = kContainerMembers + 2 * (c.id.size() + c.name.size() + c.runtime.size()) +
                 text(c.pod_namespace) + text(c.pod_name) + text(entry.workload.name) +
                 text(entry.workload.kind);
  for (const InventoryProcess& process : entry.processes) {
    bytes += kProcessMembers + 2 * process.name.size();
  }
  return bytes;
}

InventoryScanner::InventoryScanner(std::filesystem::path proc_root, ContainerRoots roots,
                                   WorkloadLabelKeys keys, InventoryLimits limits)
    : proc_root_(std::move(proc_root)),
      names_(std::move(roots), workload_label_keys(keys)),
      keys_(std::move(keys)),
      limits_(limits) {}

Result<HostInventory> InventoryScanner::scan() {
  UniqueFd proc_fd(::open(proc_root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!proc_fd) return Error::from_errno("cannot open " + proc_root_.string());
  DIR* listing = ::fdopendir(::dup(proc_fd.get()));
  if (listing == nullptr) return Error::from_errno("cannot list " + proc_root_.string());

  HostInventory inventory;
  std::map<ContainerCgroup, std::vector<InventoryProcess>> by_container;
  while (const dirent* entry = ::readdir(listing)) {
    std::optional<pid_t> pid = pid_of(entry->d_name);
    if (!pid) continue;
    std::string dir = entry->d_name;
    auto text = read_small(proc_fd.get(), dir + "/cgroup", kMaxCgroupFileBytes);
    if (!text) continue;
    auto cgroups = parse_process_cgroups(*text);
    if (!cgroups) continue;
    std::optional<ContainerCgroup> container = container_of(*cgroups);
    if (!container) continue;
    if (inventory.processes == limits_.max_processes) {
      ++inventory.processes_left_out;
      continue;
    }
    auto comm = read_small(proc_fd.get(), dir + "/comm", kMaxCommBytes);
    if (!comm) continue;
    by_container[*container].push_back({*pid, printable(*comm)});
    ++inventory.processes;
  }
  ::closedir(listing);

  for (auto& [cgroup, processes] : by_container) {
    if (inventory.containers.size() == limits_.max_containers) {
      ++inventory.containers_left_out;
      inventory.processes -= processes.size();
      inventory.processes_left_out += processes.size();
      continue;
    }
    std::optional<ContainerMetadata> metadata = names_.metadata_of(cgroup);
    if (!metadata) continue;
    std::sort(processes.begin(), processes.end(),
              [](const auto& a, const auto& b) { return a.pid < b.pid; });
    Workload workload = workload_of(*metadata, keys_);
    InventoryContainer entry{std::move(*metadata), std::move(workload), std::move(processes)};
    size_t bytes = wire_bytes(entry);
    if (inventory.wire_bytes + bytes > limits_.max_wire_bytes) {
      ++inventory.containers_left_out;
      inventory.processes -= entry.processes.size();
      inventory.processes_left_out += entry.processes.size();
      continue;
    }
    inventory.wire_bytes += bytes;
    inventory.containers.push_back(std::move(entry));
  }
  std::sort(inventory.containers.begin(), inventory.containers.end(),
            [](const auto& a, const auto& b) { return sort_key(a) < sort_key(b); });
  return inventory;
}

}  // namespace dormant::inventory
