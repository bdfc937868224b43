#include "inventory/host_inventory.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

namespace dormant::inventory {
namespace {

auto sort_key(const InventoryContainer& entry) {
  const ContainerMetadata& c = entry.container;
  return std::tie(c.pod_namespace, c.pod_name, c.name, c.id);
}

// The host's own processes, last, as many as the wire budget leaves room for: on a host without
// containers they are the whole inventory, and the first of them are worth more than none.
void add_host_processes(HostInventory& inventory, std::vector<InventoryProcess> processes,
                        size_t max_wire_bytes) {
  if (processes.empty()) return;
  InventoryContainer entry;
  size_t bytes = wire_bytes(entry);
  size_t kept = 0;
  for (; kept < processes.size(); ++kept) {
    size_t more = wire_bytes(processes[kept]);
    if (inventory.wire_bytes + bytes + more > max_wire_bytes) break;
    bytes += more;
  }
  size_t left_out = processes.size() - kept;
  inventory.processes -= left_out;
  inventory.processes_left_out += left_out;
  if (kept == 0) return;
  processes.resize(kept);
  entry.processes = std::move(processes);
  inventory.wire_bytes += bytes;
  inventory.containers.push_back(std::move(entry));
}

}  // namespace

bool is_host_entry(const InventoryContainer& entry) {
  return entry.container.id.empty() && entry.container.name.empty();
}

// Member names, quotes, separators; every string twice its length (an escaped '"' or '\\').
size_t wire_bytes(const InventoryProcess& process) {
  constexpr size_t kProcessMembers = 48;
  return kProcessMembers + 2 * process.name.size();
}

size_t wire_bytes(const InventoryContainer& entry) {
  constexpr size_t kContainerMembers = 200;
  auto text = [](const std::optional<std::string>& value) { return value ? 2 * value->size() : 0; };
  const ContainerMetadata& c = entry.container;
  size_t bytes = kContainerMembers + 2 * (c.id.size() + c.name.size() + c.runtime.size()) +
                 text(c.pod_namespace) + text(c.pod_name) + text(entry.workload.name) +
                 text(entry.workload.kind);
  for (const InventoryProcess& process : entry.processes) bytes += wire_bytes(process);
  return bytes;
}

InventoryScanner::InventoryScanner(std::filesystem::path proc_root, ContainerRoots roots,
                                   WorkloadLabelKeys keys, InventoryLimits limits)
    : census_(std::move(proc_root)),
      names_(std::move(roots), workload_label_keys(keys)),
      keys_(std::move(keys)),
      limits_(limits) {}

Result<HostInventory> InventoryScanner::scan() {
  auto census = census_.take(limits_.max_processes);
  if (!census) return census.error();
  HostInventory inventory;
  inventory.processes = census->processes;
  inventory.processes_left_out = census->processes_left_out;
  inventory.files_read = census->files_read;
  for (auto& [cgroup, processes] : census->containers) {
    if (inventory.containers.size() == limits_.max_containers) {
      ++inventory.containers_left_out;
      inventory.processes -= processes.size();
      inventory.processes_left_out += processes.size();
      continue;
    }
    std::optional<ContainerMetadata> metadata = names_.metadata_of(cgroup);
    if (!metadata) continue;
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
  add_host_processes(inventory, std::move(census->host_processes), limits_.max_wire_bytes);
  return inventory;
}

}  // namespace dormant::inventory
