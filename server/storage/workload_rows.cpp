#include "server/storage/workload_rows.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "server/storage/command_rows.h"

namespace dormant::server::storage {
namespace {

using HostKey = std::pair<std::string_view, std::string_view>;  // hostname, service

// The index of each host in snapshot.hosts, which must not change while it is used.
class HostIndex {
 public:
  explicit HostIndex(const std::vector<ActiveHost>& hosts) {
    index_.reserve(hosts.size());
    for (size_t i = 0; i < hosts.size(); ++i) {
      index_.emplace(HostKey{hosts[i].hostname, hosts[i].service_name}, i);
    }
  }
  std::optional<size_t> find(std::string_view hostname, std::string_view service) const {
    auto found = index_.find(HostKey{hostname, service});
    if (found == index_.end()) return std::nullopt;
    return found->second;
  }

 private:
  struct Hash {
    size_t operator()(const HostKey& key) const {
      return std::hash<std::string_view>{}(key.first) * 31 ^
             std::hash<std::string_view>{}(key.second);
    }
  };
  std::unordered_map<HostKey, size_t, Hash> index_;
};

// Runs on_row(host) for each row of `select` whose first two columns (hostname, service) name a
// host of `index`; a host heard from since the hosts were read is skipped.
template <typename OnRow>
Result<void> for_each_host_row(Statement& select, const HostIndex& index, const OnRow& on_row) {
  for (;;) {
    auto row = select.step();
    if (!row) return std::move(row).take_error();
    if (!*row) return ok();
    if (auto host = index.find(select.text_view(0), select.text_view(1))) on_row(*host);
  }
}

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

// In the table's order: the hosts read above pick out the active ones (joining and sorting in the
// database took PostgreSQL twice as long). Each host's count of containers gives each row its
// place; rows it does not place (a count that disagrees with the rows) are sorted in after.
Result<void> read_containers(Database& db, const SnapshotQuery& query, const HostIndex& index,
                             WorkloadSnapshot& snapshot) {
  auto select = db.prepare(R"sql(
SELECT hostname, service_name, position, container_name, namespace, pod_name, workload_name,
       workload_kind, process_count
FROM host_containers
WHERE CAST(?1 AS TEXT) IS NULL OR service_name = ?1)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(query.service_name);
  std::vector<size_t> first_slot(snapshot.hosts.size() + 1);
  for (size_t i = 0; i < snapshot.hosts.size(); ++i) {
    first_slot[i + 1] =
        first_slot[i] + static_cast<size_t>(std::max<int64_t>(0, snapshot.hosts[i].containers));
  }
  std::vector<ActiveContainer>& placed = snapshot.containers;
  placed.resize(first_slot.back());
  std::vector<bool> filled(placed.size());
  std::vector<ActiveContainer> strays;
  auto rows = for_each_host_row(*select, index, [&](size_t host) {
    int64_t position = select->int64(2);
    size_t listed = first_slot[host + 1] - first_slot[host];
    size_t slot = first_slot[host] + static_cast<size_t>(position);
    bool in_place = position >= 0 && static_cast<size_t>(position) < listed && !filled[slot];
    ActiveContainer& entry = in_place ? placed[slot] : strays.emplace_back();
    if (in_place) filled[slot] = true;
    entry.host = host;
    entry.position = position;
    entry.container.container_name = select->text_view(3);
    entry.container.pod_namespace = select->optional_text(4);
    entry.container.pod_name = select->optional_text(5);
    entry.container.workload_name = select->optional_text(6);
    entry.container.workload_kind = select->optional_text(7);
    entry.process_count = select->int64(8);
  });
  if (!rows) return rows;
  if (strays.empty() && std::find(filled.begin(), filled.end(), false) == filled.end()) {
    return ok();
  }
  size_t kept = 0;
  for (size_t slot = 0; slot < placed.size(); ++slot) {
    if (!filled[slot]) continue;
    if (kept != slot) placed[kept] = std::move(placed[slot]);
    ++kept;
  }
  placed.resize(kept);
  std::move(strays.begin(), strays.end(), std::back_inserter(placed));
  by_host_and_position(placed);
  return ok();
}

// Statements of 16 or 256 containers, the rest of the rows matching none: two statements to
// prepare, whatever the count.
constexpr size_t kContainersPerRead = 256;
constexpr size_t kContainersPerSmallRead = 16;

// The processes of the containers `batch` (indices in snapshot.containers), but for a container
// that its host has replaced at its position since the snapshot (another name or pod). SQLite
// joins in the order written after CROSS JOIN: from the wanted rows through the keys. Planned
// freely, it scanned every process of the fleet for 256 wanted rows (430 ms, not 2).
Result<void> read_processes_of_batch(Database& db, WorkloadSnapshot& snapshot,
                                     std::span<const size_t> batch) {
  size_t rows =
      batch.size() <= kContainersPerSmallRead ? kContainersPerSmallRead : kContainersPerRead;
  auto select =
      db.prepare("WITH wanted (entry, hostname, service_name, position) AS (" +
                 values_rows(rows, {"CAST(? AS BIGINT)", "?", "?", "CAST(? AS BIGINT)"}) + R"sql()
SELECT wanted.entry, p.pid, p.process_name, c.container_name, c.pod_name
FROM wanted CROSS JOIN host_containers c CROSS JOIN host_processes p
WHERE c.hostname = wanted.hostname AND c.service_name = wanted.service_name
  AND c.position = wanted.position AND p.hostname = c.hostname
  AND p.service_name = c.service_name AND p.position = c.position
ORDER BY wanted.entry, p.pid)sql");
  if (!select) return std::move(select).take_error();
  for (size_t row = 0; row < rows; ++row) {
    int first = static_cast<int>(row * 4 + 1);
    if (row >= batch.size()) {
      select->bind_from(first, int64_t{-1}, "", "", int64_t{-1});
      continue;
    }
    const ActiveContainer& entry = snapshot.containers[batch[row]];
    const ActiveHost& host = snapshot.hosts[entry.host];
    select->bind_from(first, static_cast<int64_t>(batch[row]), host.hostname, host.service_name,
                      entry.position);
  }
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    int64_t entry = select->int64(0);
    if (entry < 0 || static_cast<size_t>(entry) >= snapshot.containers.size()) continue;
    HostContainer& container = snapshot.containers[static_cast<size_t>(entry)].container;
    if (container.container_name != select->text_view(3) ||
        container.pod_name != select->optional_text(4)) {
      continue;
    }
    container.processes.push_back({select->int64(1), select->text(2)});
  }
  select->reset();
  return ok();
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
                                const HostIndex& index, WorkloadSnapshot& snapshot) {
  std::vector<std::pair<size_t, size_t>> ranges = container_ranges(snapshot);
  auto select = db.prepare(R"sql(
SELECT p.hostname, p.service_name, p.position, p.pid, p.process_name
FROM host_processes p JOIN hosts h ON h.hostname = p.hostname AND h.service_name = p.service_name
WHERE h.last_heartbeat_ms >= ?1 AND (CAST(?2 AS TEXT) IS NULL OR p.service_name = ?2)
ORDER BY p.hostname, p.service_name, p.pid)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(since_ms, query.service_name);
  return for_each_host_row(*select, index, [&](size_t host) {
    ActiveContainer* container =
        at_position(containers_of(snapshot, ranges[host]), select->int64(2));
    if (container) container->container.processes.push_back({select->int64(3), select->text(4)});
  });
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

  if (auto read = read_containers(db, query, index, snapshot); !read) {
    return std::move(read).take_error();
  }
  if (query.all_processes) {
    if (auto read = read_all_processes(db, since_ms, query, index, snapshot); !read) {
      return std::move(read).take_error();
    }
    return snapshot;
  }
  std::vector<size_t> listing_pids;
  for (size_t i = 0; i < snapshot.containers.size(); ++i) {
    if (is_pid_list_start(snapshot.hosts[snapshot.containers[i].host].command)) {
      listing_pids.push_back(i);
    }
  }
  if (auto read = read_processes_of_containers(db, snapshot, listing_pids); !read) {
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

Result<void> read_processes_of_containers(Database& db, WorkloadSnapshot& snapshot,
                                          const std::vector<size_t>& containers) {
  std::vector<size_t> unread;
  for (size_t i : containers) {
    const ActiveContainer& entry = snapshot.containers[i];
    if (entry.process_count > 0 && entry.container.processes.empty()) unread.push_back(i);
  }
  std::sort(unread.begin(), unread.end());
  unread.erase(std::unique(unread.begin(), unread.end()), unread.end());
  for (size_t first = 0; first < unread.size(); first += kContainersPerRead) {
    std::span<const size_t> batch =
        std::span(unread).subspan(first, std::min(kContainersPerRead, unread.size() - first));
    if (auto read = read_processes_of_batch(db, snapshot, batch); !read) return read;
  }
  return ok();
}

}  // namespace dormant::server::storage
