#include "server/storage/workload_rows.h"

#include <map>
#include <utility>

#include "server/storage/command_rows.h"
#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

using HostKey = std::pair<std::string, std::string>;  // hostname, service

Result<void> read_hosts(Database& db, const SnapshotQuery& query, int64_t since_ms,
                        WorkloadSnapshot& snapshot) {
  auto select = db.prepare(R"sql(
SELECT hostname, service_name, ip_address, agent_version, run_mode, last_heartbeat_ms,
       supported_perf_events, inventory_containers, inventory_processes
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
    auto events = strings_from_json(select->text(6), "hosts.supported_perf_events");
    if (!events) return std::move(events).take_error();
    host.perf_supported_events = std::move(*events);
    host.containers = select->int64(7);
    host.processes = select->int64(8);
    snapshot.hosts.push_back(std::move(host));
  }
  return ok();
}

bool is_pid_list_start(const std::optional<Command>& command) {
  return command && command->type == CommandType::kStart &&
         command->combined_config.contains("pids");
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
  std::map<HostKey, size_t> index;
  for (size_t i = 0; i < snapshot.hosts.size(); ++i) {
    index.emplace(HostKey{snapshot.hosts[i].hostname, snapshot.hosts[i].service_name}, i);
  }
  auto commands =
      find_current_commands_of_hosts_since(db, from_unix_ms(since_ms), query.service_name);
  if (!commands) return std::move(commands).take_error();
  for (Command& command : *commands) {
    auto host = index.find(HostKey{command.hostname, command.service_name});
    if (host != index.end()) snapshot.hosts[host->second].command = std::move(command);
  }

  auto containers = db.prepare(R"sql(
SELECT c.hostname, c.service_name, c.position, c.container_id, c.container_name, c.runtime,
       c.namespace, c.pod_name, c.workload_name, c.workload_kind, c.process_count
FROM host_containers c JOIN hosts h ON h.hostname = c.hostname AND h.service_name = c.service_name
WHERE h.last_heartbeat_ms >= ?1 AND (CAST(?2 AS TEXT) IS NULL OR c.service_name = ?2)
ORDER BY c.service_name, c.hostname, c.position)sql");
  if (!containers) return std::move(containers).take_error();
  containers->bind_all(since_ms, query.service_name);
  // (host, position) → index in snapshot.containers
  std::map<std::pair<size_t, int64_t>, size_t> container_index;
  for (;;) {
    auto row = containers->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    auto host = index.find(HostKey{containers->text(0), containers->text(1)});
    if (host == index.end()) continue;  // a heartbeat since the hosts were read
    ActiveContainer entry;
    entry.host = host->second;
    entry.container = {containers->optional_text(3), containers->text(4),
                       containers->optional_text(5), containers->optional_text(6),
                       containers->optional_text(7), containers->optional_text(8),
                       containers->optional_text(9), {}};
    entry.process_count = containers->int64(10);
    container_index.emplace(std::pair{host->second, containers->int64(2)},
                            snapshot.containers.size());
    snapshot.containers.push_back(std::move(entry));
  }

  auto processes = db.prepare(R"sql(
SELECT p.hostname, p.service_name, p.position, p.pid, p.process_name
FROM host_processes p JOIN hosts h ON h.hostname = p.hostname AND h.service_name = p.service_name
WHERE h.last_heartbeat_ms >= ?1 AND (CAST(?2 AS TEXT) IS NULL OR p.service_name = ?2)
  AND (?3 = 1 OR (p.hostname = ?4 AND p.service_name = ?5))
ORDER BY p.hostname, p.service_name, p.position, p.pid)sql");
  if (!processes) return std::move(processes).take_error();
  auto take = [&](Statement& select) -> Result<void> {
    for (;;) {
      auto row = select.step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      auto host = index.find(HostKey{select.text(0), select.text(1)});
      if (host == index.end()) continue;
      auto container = container_index.find({host->second, select.int64(2)});
      if (container == container_index.end()) continue;
      snapshot.containers[container->second].container.processes.push_back(
          {select.int64(3), select.text(4)});
    }
    select.reset();
    return ok();
  };
  if (query.all_processes) {
    processes->bind_all(since_ms, query.service_name, true, "", "");
    if (auto done = take(*processes); !done) return std::move(done).take_error();
    return snapshot;
  }
  for (const ActiveHost& host : snapshot.hosts) {
    if (!is_pid_list_start(host.command)) continue;
    processes->bind_all(since_ms, query.service_name, false, host.hostname, host.service_name);
    if (auto done = take(*processes); !done) return std::move(done).take_error();
  }
  return snapshot;
}

}  // namespace dormant::server::storage
