#include "server/storage/workload_rows.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <utility>

#include "server/storage/command_rows.h"

namespace dormant::server::storage {
namespace {

using HostKey = std::pair<std::string, std::string>;  // hostname, service

// The index of each host in snapshot.hosts. Rows mostly come grouped by host: the last one found is
// tried first.
class HostIndex {
 public:
  explicit HostIndex(const std::vector<ActiveHost>& hosts) {
    for (size_t i = 0; i < hosts.size(); ++i) {
      index_.emplace(HostKey{hosts[i].hostname, hosts[i].service_name}, i);
    }
  }
  std::optional<size_t> find(std::string hostname, std::string service) {
    if (last_ == index_.end() || last_->first.first != hostname || last_->first.second != service) {
      last_ = index_.find(HostKey{std::move(hostname), std::move(service)});
    }
    if (last_ == index_.end()) return std::nullopt;  // a heartbeat since the hosts were read
    return last_->second;
  }

 private:
  std::map<HostKey, size_t> index_;
  std::map<HostKey, size_t>::const_iterator last_ = index_.end();
};

Result<void> read_hosts(Database& db, const SnapshotQuery& query, int64_t since_ms,
                        WorkloadSnapshot& snapshot) {
  auto select = db.prepare(R"sql(
SELECT hostname, service_name, ip_address, agent_version, run_mode, last_heartbeat_ms,
       inventory_containers, inventory_processes
FROM hosts
WHERE last_heartbeat_ms >= ?1 AND (CAST(?2 AS TEXT) IS NULL OR service_name = ?2)
ORDER BY service_name, hostname)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(since_ms, query.service_name);
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    ActiveHost host;
    host.hostname = select->text(0);
    host.service_name = select->text(1);
    host.ip_address = select->text(2);
    host.agent_version = select->optional_text(3);
    host.run_mode = select->optional_text(4);
    host.last_heartbeat_at = from_unix_ms(select->int64(5));
    host.containers = select->int64(6);
    host.processes = select->int64(7);
    snapshot.hosts.push_back(std::move(host));
  }
  return ok();
}

// Each host's containers together, by position, in the order of the hosts. Rows mostly come so
// already; when not, an order of indices is sorted and the containers moved once.
void by_host_and_position(std::vector<ActiveContainer>& containers) {
  auto key = [&](uint32_t i) { return std::pair(containers[i].host, containers[i].position); };
  std::vector<uint32_t> order(containers.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto before = [&](uint32_t a, uint32_t b) { return key(a) < key(b); };
  if (std::is_sorted(order.begin(), order.end(), before)) return;
  std::sort(order.begin(), order.end(), before);
  std::vector<ActiveContainer> sorted;
  sorted.reserve(containers.size());
  for (uint32_t i : order) sorted.push_back(std::move(containers[i]));
  containers = std::move(sorted);
}

bool is_pid_list_start(const std::optional<Command>& command) {
  return command && command->type == CommandType::kStart &&
         command->combined_config.contains("pids");
}

// The container at `position` among one host's containers (sorted by position), if any.
ActiveContainer* at_position(std::span<ActiveContainer> containers, int64_t position) {
  auto found = std::lower_bound(
      containers.begin(), containers.end(), position,
      [](const ActiveContainer& c, int64_t wanted) { return c.position < wanted; });
  return found != containers.end() && found->position == position ? &*found : nullptr;
}

std::span<ActiveContainer> containers_of(WorkloadSnapshot& snapshot,
                                         std::pair<size_t, size_t> range) {
  return std::span(snapshot.containers).subspan(range.first, range.second - range.first);
}

Result<void> read_all_processes(Database& db, int64_t since_ms, const SnapshotQuery& query,
                                HostIndex& index, WorkloadSnapshot& snapshot) {
  std::vector<std::pair<size_t, size_t>> ranges = container_ranges(snapshot);
  auto select = db.prepare(R"sql(
SELECT p.hostname, p.service_name, p.position, p.pid, p.process_name
FROM host_processes p JOIN hosts h ON h.hostname = p.hostname AND h.service_name = p.service_name
WHERE h.last_heartbeat_ms >= ?1 AND (CAST(?2 AS TEXT) IS NULL OR p.service_name = ?2)
ORDER BY p.hostname, p.service_name, p.pid)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(since_ms, query.service_name);
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    std::optional<size_t> host = index.find(select->text(0), select->text(1));
    if (!host) continue;
    ActiveContainer* container =
        at_position(containers_of(snapshot, ranges[*host]), select->int64(2));
    if (container) container->container.processes.push_back({select->int64(3), select->text(4)});
  }
  return ok();
}

}  // namespace

Result<WorkloadSnapshot> read_workload_snapshot(Database& db, const SnapshotQuery& query,
                                                TimePoint now) {
  int64_t since_ms = to_unix_ms(now - query.active_window);
  WorkloadSnapshot snapshot;
  auto counts = db.prepare("SELECT service_name, COUNT(*) FROM hosts GROUP BY service_name");
  if (!counts) return std::move(counts).take_error();
  for (;;) {
    auto row = counts->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    snapshot.hosts_by_service[counts->text(0)] = counts->int64(1);
  }
  if (auto hosts = read_hosts(db, query, since_ms, snapshot); !hosts) {
    return std::move(hosts).take_error();
  }
  HostIndex index(snapshot.hosts);
  auto commands =
      find_current_commands_of_hosts_since(db, from_unix_ms(since_ms), query.service_name);
  if (!commands) return std::move(commands).take_error();
  for (Command& command : *commands) {
    std::optional<size_t> host = index.find(command.hostname, command.service_name);
    if (host) snapshot.hosts[*host].command = std::move(command);
  }

  // In the table's order: the hosts read above pick out the active ones, and the containers are
  // put in order here (joining and sorting in the database took PostgreSQL twice as long).
  auto containers = db.prepare(R"sql(
SELECT hostname, service_name, position, container_name, namespace, pod_name, workload_name,
       workload_kind, process_count
FROM host_containers
WHERE CAST(?1 AS TEXT) IS NULL OR service_name = ?1)sql");
  if (!containers) return std::move(containers).take_error();
  containers->bind_all(query.service_name);
  int64_t listed = 0;
  for (const ActiveHost& host : snapshot.hosts) listed += host.containers;
  snapshot.containers.reserve(static_cast<size_t>(listed));
  for (;;) {
    auto row = containers->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    std::optional<size_t> host = index.find(containers->text(0), containers->text(1));
    if (!host) continue;
    ActiveContainer entry;
    entry.host = *host;
    entry.position = containers->int64(2);
    entry.container.container_name = containers->text(3);
    entry.container.pod_namespace = containers->optional_text(4);
    entry.container.pod_name = containers->optional_text(5);
    entry.container.workload_name = containers->optional_text(6);
    entry.container.workload_kind = containers->optional_text(7);
    entry.process_count = containers->int64(8);
    snapshot.containers.push_back(std::move(entry));
  }
  by_host_and_position(snapshot.containers);

  if (query.all_processes) {
    if (auto read = read_all_processes(db, since_ms, query, index, snapshot); !read) {
      return std::move(read).take_error();
    }
    return snapshot;
  }
  std::vector<size_t> listing_pids;
  for (size_t i = 0; i < snapshot.hosts.size(); ++i) {
    if (is_pid_list_start(snapshot.hosts[i].command)) listing_pids.push_back(i);
  }
  if (auto read = read_processes_of_hosts(db, snapshot, listing_pids); !read) {
    return std::move(read).take_error();
  }
  return snapshot;
}

std::vector<std::pair<size_t, size_t>> container_ranges(const WorkloadSnapshot& snapshot) {
  std::vector<std::pair<size_t, size_t>> ranges(snapshot.hosts.size());
  for (size_t i = 0; i < snapshot.containers.size(); ++i) {
    auto& [first, last] = ranges[snapshot.containers[i].host];
    if (first == last) first = i;
    last = i + 1;
  }
  return ranges;
}

Result<void> read_processes_of_hosts(Database& db, WorkloadSnapshot& snapshot,
                                     const std::vector<size_t>& hosts) {
  std::vector<std::pair<size_t, size_t>> ranges = container_ranges(snapshot);
  auto select = db.prepare(R"sql(
SELECT p.position, p.pid, p.process_name, c.container_name, c.pod_name
FROM host_processes p JOIN host_containers c
  ON c.hostname = p.hostname AND c.service_name = p.service_name AND c.position = p.position
WHERE p.hostname = ?1 AND p.service_name = ?2
ORDER BY p.pid)sql");
  if (!select) return std::move(select).take_error();
  for (size_t host : hosts) {
    std::span<ActiveContainer> containers = containers_of(snapshot, ranges[host]);
    bool read = std::any_of(containers.begin(), containers.end(), [](const ActiveContainer& c) {
      return !c.container.processes.empty();
    });
    if (containers.empty() || read) continue;
    select->bind_all(snapshot.hosts[host].hostname, snapshot.hosts[host].service_name);
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      ActiveContainer* container = at_position(containers, select->int64(0));
      if (!container || container->container.container_name != select->text(3) ||
          container->container.pod_name != select->optional_text(4)) {
        continue;
      }
      container->container.processes.push_back({select->int64(1), select->text(2)});
    }
    select->reset();
  }
  return ok();
}

}  // namespace dormant::server::storage
