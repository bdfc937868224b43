#include "server/api/workload_status.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include "server/api/wire_mapping.h"

namespace dormant::server::api {
namespace {

using storage::ActiveContainer;
using storage::ActiveHost;
using storage::Command;
using storage::HostContainer;
using storage::HostProcess;
using storage::TargetScope;
using storage::WorkloadSnapshot;

// Dense ids for distinct tuples of texts that the snapshot holds. Open addressing in one array of
// hashes and ids: a fleet's 100,000 pods take about one probe each, where a node-based map took a
// bucket, a node and an allocation.
template <size_t N>
class Interner {
 public:
  using Key = std::array<std::string_view, N>;
  explicit Interner(size_t expected = 8) {
    keys_.reserve(expected);
    rehash(std::bit_ceil(std::max<size_t>(expected, 8) * 2));
  }
  uint32_t id(const Key& key) {
    uint64_t hash = hash_of(key);
    for (size_t i = slot_of(hash);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& slot = slots_[i];
      if (slot.id == kEmpty) {
        auto id = static_cast<uint32_t>(keys_.size());
        slot = {hash, id};
        keys_.push_back(key);
        if (keys_.size() * 2 > slots_.size()) rehash(slots_.size() * 2);
        return id;
      }
      if (slot.hash == hash && keys_[slot.id] == key) return slot.id;
    }
  }
  size_t size() const { return keys_.size(); }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    uint32_t id = kEmpty;
  };
  static uint64_t hash_of(const Key& key) {
    uint64_t hash = 0;
    for (std::string_view part : key) {
      hash = hash * 1'000'003 ^ std::hash<std::string_view>{}(part);
    }
    return hash;
  }
  // The hash's top bits, spread by Fibonacci hashing.
  size_t slot_of(uint64_t hash) const {
    return static_cast<size_t>((hash * 0x9e37'79b9'7f4a'7c15ULL) >> shift_);
  }
  void rehash(size_t count) {
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(count));
    shift_ = 64 - std::countr_zero(count);
    for (const Slot& slot : old) {
      if (slot.id == kEmpty) continue;
      size_t i = slot_of(slot.hash);
      while (slots_[i].id != kEmpty) i = (i + 1) & (count - 1);
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;  // a power of two, at most half full
  std::vector<Key> keys_;    // by id
  int shift_ = 0;
};

std::string_view part(const std::optional<std::string>& text) {
  return text ? std::string_view(*text) : std::string_view();
}

// What a row shows and counts of its group.
struct Summary {
  const ActiveHost* host = nullptr;  // the member heard from last: its descriptive fields
  const HostContainer* container = nullptr;
  const HostProcess* process = nullptr;
  std::string_view status;
  std::vector<uint32_t> hosts, namespaces, pods, containers;
  std::vector<int64_t> pids;
  int64_t processes = 0;
  bool active = false;
};

size_t distinct(std::vector<uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ids.erase(std::remove(ids.begin(), ids.end(), UINT32_MAX), ids.end());
  return ids.size();
}

nlohmann::json optional_text(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json row_json(const std::string& id, TargetScope scope, Summary& group) {
  const ActiveHost& host = *group.host;
  const HostContainer* c = group.container;
  bool per_host = scope == TargetScope::kHost || scope == TargetScope::kContainer ||
                  scope == TargetScope::kProcess;
  bool in_pod = scope == TargetScope::kPod || scope == TargetScope::kContainer ||
                scope == TargetScope::kProcess;
  auto member = [&](std::optional<std::string> HostContainer::*field) {
    return c ? optional_text(c->*field) : nlohmann::json(nullptr);
  };
  const std::optional<Command>& command = host.command;
  nlohmann::json frequency = nullptr;
  std::string mode = "Ad Hoc";
  if (command && command->type == storage::CommandType::kStart) {
    frequency = command->combined_config.value("frequency", nlohmann::json(nullptr));
    if (command->combined_config.value("continuous", false)) mode = "Continuous";
  }
  std::sort(group.pids.begin(), group.pids.end());
  group.pids.erase(std::unique(group.pids.begin(), group.pids.end()), group.pids.end());
  size_t hosts = distinct(group.hosts);
  return {
      {"id", id},
      {"scope", storage::to_string(scope)},
      {"serviceName", host.service_name},
      {"namespace", scope == TargetScope::kService || scope == TargetScope::kHost
                        ? nlohmann::json(nullptr)
                        : member(&HostContainer::pod_namespace)},
      {"hostname", per_host ? nlohmann::json(host.hostname) : nlohmann::json(nullptr)},
      {"ipAddress", per_host ? nlohmann::json(host.ip_address) : nlohmann::json(nullptr)},
      {"podName", in_pod ? member(&HostContainer::pod_name) : nlohmann::json(nullptr)},
      {"containerName", (scope == TargetScope::kContainer || scope == TargetScope::kProcess) && c &&
                                !c->outside_containers()
                            ? nlohmann::json(c->container_name)
                            : nlohmann::json(nullptr)},
      {"workloadName", in_pod ? member(&HostContainer::workload_name) : nlohmann::json(nullptr)},
      {"workloadKind", in_pod ? member(&HostContainer::workload_kind) : nlohmann::json(nullptr)},
      {"processName", scope == TargetScope::kProcess && group.process
                          ? nlohmann::json(group.process->process_name)
                          : nlohmann::json(nullptr)},
      {"pid", scope == TargetScope::kProcess && group.process ? nlohmann::json(group.process->pid)
                                                              : nlohmann::json(nullptr)},
      {"pids", group.pids},
      {"activeHosts", hosts},
      {"hostCount", hosts},
      {"namespaceCount", distinct(group.namespaces)},
      {"podCount", distinct(group.pods)},
      {"containerCount", distinct(group.containers)},
      {"processCount", group.processes},
      {"commandType", command_type_of(host)},
      {"profilingStatus", group.active ? std::string_view("active") : group.status},
      {"profilingMode", mode},
      {"frequency", frequency},
      {"profilerSummary", profiler_summary(command)},
      {"heartbeatTimestamp", iso_time(host.last_heartbeat_at)},
      {"agentVersion", optional_text(host.agent_version)},
      {"runMode", optional_text(host.run_mode)},
  };
}

// The members that name a group of `scope` (but process), the same for every unit of the group:
// they order the groups, and Studio's row id joins them with '|'.
struct GroupName {
  std::array<std::string_view, 5> parts;  // the rest empty
  size_t size = 0;

  std::string joined() const {
    std::string text(parts[0]);
    for (size_t i = 1; i < size; ++i) (text += '|') += parts[i];
    return text;
  }
};

GroupName group_name(TargetScope scope, const ActiveHost& host, const HostContainer* c) {
  std::string_view ns = c ? part(c->pod_namespace) : "", pod = c ? part(c->pod_name) : "";
  switch (scope) {
    case TargetScope::kHost:
      return {{host.service_name, host.hostname}, 2};
    case TargetScope::kNamespace:
      return {{host.service_name, ns}, 2};
    case TargetScope::kPod:
      return {{host.service_name, ns, pod}, 3};
    case TargetScope::kContainer:
      return {{host.service_name, host.hostname, ns, pod, c->container_name}, 5};
    default:
      return {{host.service_name}, 1};
  }
}

std::pair<size_t, size_t> page_range(const Page& page, size_t total) {
  size_t first = std::min(total, static_cast<size_t>(page.number * page.size));
  return {first, std::min(total, first + static_cast<size_t>(page.size))};
}

}  // namespace

WorkloadStatusView::WorkloadStatusView(TargetScope scope, StatusFilters filters, Page page,
                                       storage::TimePoint now)
    : scope_(scope), filters_(std::move(filters)), page_(page), now_(now) {}

void WorkloadStatusView::collect_units(const WorkloadSnapshot& snapshot) {
  Interner<1> services, hostnames(snapshot.hosts.size());
  Interner<2> namespaces;
  Interner<3> pods(snapshot.containers.size());
  std::vector<bool> host_seen(snapshot.hosts.size()), container_seen(snapshot.containers.size());
  uint32_t service_id = kNone;
  auto add = [&](uint32_t host_index, uint32_t container, uint32_t process, int64_t processes) {
    const ActiveHost& host = snapshot.hosts[host_index];
    const HostContainer* c =
        container == kNone ? nullptr : &snapshot.containers[container].container;
    const HostProcess* p = process == kNone ? nullptr : &c->processes[process];
    std::string_view status = profiling_status_of(host, p, c, now_);
    if (!filters_.admits_status(status)) return;
    Unit unit{host_index, container, process, processes, status};
    if (!host_seen[host_index]) {
      service_id = services.id({host.service_name});
      hostnames.id({host.hostname});
      host_seen[host_index] = true;
    }
    unit.service_id = service_id;
    if (c && !c->outside_containers()) {
      std::string_view ns = part(c->pod_namespace);
      if (c->pod_namespace) unit.namespace_id = namespaces.id({host.service_name, ns});
      if (c->pod_name) unit.pod_id = pods.id({host.service_name, ns, part(c->pod_name)});
      // A container is its entry: an agent lists each once.
      unit.container_id = container;
      container_seen[container] = true;
    }
    tabs_.processes += processes;
    units_.push_back(unit);
  };
  std::vector<std::pair<size_t, size_t>> ranges = storage::container_ranges(snapshot);
  units_.reserve(snapshot.hosts.size() + snapshot.containers.size());
  for (uint32_t h = 0; h < snapshot.hosts.size(); ++h) {
    if (!filters_.admits_host(snapshot.hosts[h])) continue;
    auto [first, last] = ranges[h];
    if (first == last && filters_.admits_container(nullptr) && filters_.admits_process(nullptr)) {
      add(h, kNone, kNone, 0);
    }
    for (size_t i = first; i < last; ++i) {
      const ActiveContainer& entry = snapshot.containers[i];
      if (!filters_.admits_container(&entry.container)) continue;
      const std::vector<HostProcess>& processes = entry.container.processes;
      if (processes.empty()) {
        if (filters_.admits_process(nullptr)) add(h, i, kNone, entry.process_count);
        continue;
      }
      for (uint32_t p = 0; p < processes.size(); ++p) {
        if (filters_.admits_process(&processes[p])) add(h, i, p, 1);
      }
    }
  }
  tabs_.services = services.size();
  tabs_.hostnames = hostnames.size();
  tabs_.namespaces = namespaces.size();
  tabs_.pods = pods.size();
  tabs_.containers = std::count(container_seen.begin(), container_seen.end(), true);
  tabs_.hosts = std::count(host_seen.begin(), host_seen.end(), true);
}

std::vector<size_t> WorkloadStatusView::group(const WorkloadSnapshot& snapshot) {
  collect_units(snapshot);
  return scope_ == TargetScope::kProcess ? group_processes() : group_by_scope(snapshot);
}

std::vector<size_t> WorkloadStatusView::group_by_scope(const WorkloadSnapshot& snapshot) {
  auto group_of = [&](const Unit& unit) {
    switch (scope_) {
      case TargetScope::kService:
        return unit.service_id;
      case TargetScope::kHost:
        return unit.host;
      case TargetScope::kNamespace:
        return unit.namespace_id;
      case TargetScope::kPod:
        return unit.pod_id;
      case TargetScope::kContainer:
        return unit.container_id;
      case TargetScope::kWorkload:
      case TargetScope::kProcess:
        break;
    }
    return kNone;
  };
  // The units of each group, group after group (a counting sort).
  std::vector<uint32_t> ids(units_.size());
  uint32_t groups = 0;
  for (uint32_t i = 0; i < units_.size(); ++i) {
    ids[i] = group_of(units_[i]);
    if (ids[i] != kNone) groups = std::max(groups, ids[i] + 1);
  }
  group_starts_.assign(groups + 1, 0);
  for (uint32_t id : ids) {
    if (id != kNone) ++group_starts_[id + 1];
  }
  for (size_t id = 1; id < group_starts_.size(); ++id) group_starts_[id] += group_starts_[id - 1];
  members_.resize(group_starts_.back());
  std::vector<uint32_t> next(group_starts_.begin(), group_starts_.end() - 1);
  for (uint32_t i = 0; i < units_.size(); ++i) {
    if (ids[i] != kNone) members_[next[ids[i]]++] = i;
  }
  std::vector<std::pair<std::array<std::string_view, 5>, uint32_t>> keyed;
  for (uint32_t id = 0; id + 1 < group_starts_.size(); ++id) {
    if (members_of(id).empty()) continue;
    const Unit& unit = units_[members_of(id).front()];
    const ActiveHost& host = snapshot.hosts[unit.host];
    const HostContainer* c =
        unit.container == kNone ? nullptr : &snapshot.containers[unit.container].container;
    keyed.emplace_back(group_name(scope_, host, c).parts, id);
  }
  total_ = static_cast<int64_t>(keyed.size());
  auto [first, last] = page_range(page_, keyed.size());
  // In order: the page's groups, not all of them.
  if (first > 0) std::nth_element(keyed.begin(), keyed.begin() + first, keyed.end());
  std::partial_sort(keyed.begin() + first, keyed.begin() + last, keyed.end());
  std::vector<size_t> unread;
  bool lists_pids = scope_ == TargetScope::kPod || scope_ == TargetScope::kContainer;
  for (size_t i = first; i < last; ++i) {
    page_groups_.push_back(keyed[i].second);
    for (uint32_t member : members_of(keyed[i].second)) {
      const Unit& unit = units_[member];
      if (lists_pids && unit.process == kNone && unit.processes > 0) {
        unread.push_back(unit.container);
      }
    }
  }
  return unread;
}

std::span<const uint32_t> WorkloadStatusView::members_of(uint32_t group) const {
  return std::span(members_).subspan(group_starts_[group],
                                     group_starts_[group + 1] - group_starts_[group]);
}

std::vector<size_t> WorkloadStatusView::group_processes() {
  total_ = tabs_.processes;
  auto [first, last] = page_range(page_, static_cast<size_t>(total_));
  std::vector<size_t> unread;
  size_t before = 0;  // processes of the hosts before this one
  for (size_t i = 0; i < units_.size() && before < last;) {
    uint32_t host = units_[i].host;
    size_t host_first = i;
    size_t count = 0;
    for (; i < units_.size() && units_[i].host == host; ++i) {
      count += static_cast<size_t>(units_[i].processes);
    }
    if (before + count > first && count > 0) {
      if (page_hosts_.empty()) skip_ = static_cast<int64_t>(first - before);
      page_hosts_.push_back(host);
      for (size_t u = host_first; u < i; ++u) {
        if (units_[u].process == kNone && units_[u].processes > 0) {
          unread.push_back(units_[u].container);
        }
      }
    }
    before += count;
  }
  return unread;
}

nlohmann::json WorkloadStatusView::render(const WorkloadSnapshot& snapshot) const {
  nlohmann::json rows =
      scope_ == TargetScope::kProcess ? process_rows(snapshot) : group_rows(snapshot);
  return {{"scope", storage::to_string(scope_)},
          {"rows", std::move(rows)},
          {"tabCounts",
           {{"service", tabs_.services},
            {"namespace", tabs_.namespaces},
            {"host", tabs_.hosts},
            {"pod", tabs_.pods},
            {"container", tabs_.containers},
            {"process", tabs_.processes}}},
          {"activeHosts", tabs_.hostnames},
          {"totalCount", total_},
          {"page", page_.number},
          {"pageSize", page_.size}};
}

nlohmann::json WorkloadStatusView::group_rows(const WorkloadSnapshot& snapshot) const {
  nlohmann::json rows = nlohmann::json::array();
  bool lists_pids = scope_ == TargetScope::kPod || scope_ == TargetScope::kContainer;
  for (uint32_t id : page_groups_) {
    Summary group;
    std::vector<std::string> key;
    for (uint32_t member : members_of(id)) {
      const Unit& unit = units_[member];
      const ActiveHost& host = snapshot.hosts[unit.host];
      const HostContainer* c =
          unit.container == kNone ? nullptr : &snapshot.containers[unit.container].container;
      if (!group.host || host.last_heartbeat_at > group.host->last_heartbeat_at) {
        group.host = &host;
        group.container = c;
        group.process = unit.process == kNone ? nullptr : &c->processes[unit.process];
        group.status = unit.status;
      }
      group.hosts.push_back(unit.host);
      group.namespaces.push_back(unit.namespace_id);
      group.pods.push_back(unit.pod_id);
      group.containers.push_back(unit.container_id);
      if (unit.process != kNone) {
        group.pids.push_back(c->processes[unit.process].pid);
      } else if (c && lists_pids) {
        for (const HostProcess& process : c->processes) group.pids.push_back(process.pid);
      }
      group.processes += unit.processes;
      group.active = group.active || unit.status == "active";
    }
    std::string row_id = group_name(scope_, *group.host, group.container).joined();
    rows.push_back(row_json(row_id, scope_, group));
  }
  return rows;
}

nlohmann::json WorkloadStatusView::process_rows(const WorkloadSnapshot& snapshot) const {
  struct Entry {
    const Unit* unit;
    const HostProcess* process;
  };
  nlohmann::json rows = nlohmann::json::array();
  int64_t skip = skip_;
  auto unit = units_.begin();
  for (uint32_t host : page_hosts_) {
    std::vector<Entry> entries;
    unit = std::find_if(unit, units_.end(), [&](const Unit& each) { return each.host == host; });
    for (; unit != units_.end() && unit->host == host; ++unit) {
      if (unit->container == kNone) continue;
      const HostContainer& c = snapshot.containers[unit->container].container;
      if (unit->process != kNone) {
        entries.push_back({&*unit, &c.processes[unit->process]});
        continue;
      }
      for (const HostProcess& process : c.processes) entries.push_back({&*unit, &process});
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.process->pid < b.process->pid; });
    for (const Entry& entry : entries) {
      if (skip > 0) {
        --skip;
        continue;
      }
      if (static_cast<int64_t>(rows.size()) >= page_.size) return rows;
      const ActiveHost& h = snapshot.hosts[host];
      Summary group;
      group.host = &h;
      group.container = &snapshot.containers[entry.unit->container].container;
      group.process = entry.process;
      group.status = entry.unit->status;
      group.hosts = {entry.unit->host};
      group.namespaces = {entry.unit->namespace_id};
      group.pods = {entry.unit->pod_id};
      group.containers = {entry.unit->container_id};
      group.pids = {entry.process->pid};
      group.processes = 1;
      group.active = entry.unit->status == "active";
      std::string id = h.service_name + "|" + h.hostname + "|" + std::to_string(entry.process->pid);
      rows.push_back(row_json(id, scope_, group));
    }
  }
  return rows;
}

}  // namespace dormant::server::api
