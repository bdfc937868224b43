#include "server/storage/inventory_rows.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <utility>

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

void add_text(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

void add_field(std::string& out, const std::optional<std::string>& text) {
  if (text) return add_text(out, *text);
  out += '-';
}

// What the digest is taken of: every field, in order, each with its length.
std::string canonical_text(const std::vector<HostContainer>& containers) {
  std::string out;
  for (const HostContainer& c : containers) {
    for (const auto* field : {&c.container_id, &c.runtime, &c.pod_namespace, &c.pod_name,
                              &c.workload_name, &c.workload_kind}) {
      add_field(out, *field);
    }
    add_text(out, c.container_name);
    for (const HostProcess& p : c.processes) {
      out += std::to_string(p.pid);
      add_text(out, p.process_name);
    }
    out += ';';
  }
  return out;
}

// Inserts `count` rows, at most kRowsPerInsert in one statement: one round trip each on
// PostgreSQL, not one per row. bind_row(statement, first parameter, row).
constexpr size_t kRowsPerInsert = 64;
template <typename BindRow>
Result<void> insert_rows(Database& db, std::string_view head, size_t columns, size_t count,
                         const BindRow& bind_row) {
  for (size_t first = 0; first < count; first += kRowsPerInsert) {
    size_t rows = std::min(kRowsPerInsert, count - first);
    auto insert = db.prepare(std::string(head) + " " +
                             values_rows(rows, std::vector<std::string_view>(columns, "?")));
    if (!insert) return std::move(insert).take_error();
    for (size_t row = 0; row < rows; ++row) {
      bind_row(*insert, static_cast<int>(row * columns + 1), first + row);
    }
    if (auto done = insert->run(); !done) return done;
  }
  return ok();
}

}  // namespace

Result<std::string> sync_inventory(Database& db, const std::string& hostname,
                                   const std::string& service,
                                   const std::vector<HostContainer>& containers) {
  // A pid listed twice on a host is kept once, where it is first listed.
  std::unordered_set<int64_t> seen;
  int64_t processes = 0;
  bool repeated = false;
  for (const HostContainer& container : containers) {
    for (const HostProcess& process : container.processes) {
      repeated = !seen.insert(process.pid).second || repeated;
    }
  }
  std::vector<HostContainer> deduplicated;
  if (repeated) {
    deduplicated = containers;
    seen.clear();
    for (HostContainer& container : deduplicated) {
      std::erase_if(container.processes,
                    [&](const HostProcess& process) { return !seen.insert(process.pid).second; });
    }
  }
  const std::vector<HostContainer>& kept = repeated ? deduplicated : containers;
  for (const HostContainer& container : kept) {
    processes += static_cast<int64_t>(container.processes.size());
  }
  auto mark = db.prepare(R"sql(
UPDATE hosts SET inventory_digest = ?3, inventory_containers = ?4, inventory_processes = ?5
WHERE hostname = ?1 AND service_name = ?2
  AND (inventory_digest IS NULL OR inventory_digest <> ?3))sql");
  if (!mark) return std::move(mark).take_error();
  std::string digest = text_digest(canonical_text(kept));
  auto marked =
      mark->bind_all(hostname, service, digest, static_cast<int64_t>(kept.size()), processes).run();
  if (!marked) return std::move(marked).take_error();
  if (db.changes() == 0) return digest;

  for (std::string_view sql :
       {"DELETE FROM host_processes WHERE hostname = ?1 AND service_name = ?2",
        "DELETE FROM host_containers WHERE hostname = ?1 AND service_name = ?2"}) {
    auto remove = db.prepare(sql);
    if (!remove) return std::move(remove).take_error();
    if (auto done = remove->bind_all(hostname, service).run(); !done) {
      return std::move(done).take_error();
    }
  }
  auto containers_done = insert_rows(
      db,
      "INSERT INTO host_containers (hostname, service_name, position, container_id, "
      "container_name, runtime, namespace, pod_name, workload_name, workload_kind, process_count)",
      11, kept.size(), [&](Statement& insert, int first, size_t position) {
        const HostContainer& c = kept[position];
        insert.bind_from(first, hostname, service, static_cast<int64_t>(position), c.container_id,
                         c.container_name, c.runtime, c.pod_namespace, c.pod_name, c.workload_name,
                         c.workload_kind, static_cast<int64_t>(c.processes.size()));
      });
  if (!containers_done) return std::move(containers_done).take_error();
  std::vector<std::pair<int64_t, const HostProcess*>> listed;  // position, process
  for (size_t position = 0; position < kept.size(); ++position) {
    for (const HostProcess& p : kept[position].processes) {
      listed.emplace_back(static_cast<int64_t>(position), &p);
    }
  }
  auto processes_done = insert_rows(
      db, "INSERT INTO host_processes (hostname, service_name, position, pid, process_name)", 5,
      listed.size(), [&](Statement& insert, int first, size_t row) {
        const auto& [position, p] = listed[row];
        insert.bind_from(first, hostname, service, position, p->pid, p->process_name);
      });
  if (!processes_done) return std::move(processes_done).take_error();
  return digest;
}

Result<bool> inventory_has_digest(Database& db, const std::string& hostname,
                                  const std::string& service, const std::string& digest) {
  auto select = db.prepare(
      "SELECT 1 FROM hosts WHERE hostname = ?1 AND service_name = ?2 AND inventory_digest = ?3");
  if (!select) return std::move(select).take_error();
  select->bind_all(hostname, service, digest);
  return select->step();
}

Result<std::vector<HostContainer>> read_inventory(Database& db, const std::string& hostname,
                                                  const std::string& service) {
  auto select = db.prepare(R"sql(
SELECT c.position, c.container_id, c.container_name, c.runtime, c.namespace, c.pod_name,
       c.workload_name, c.workload_kind, p.pid, p.process_name
FROM host_containers c
LEFT JOIN host_processes p
  ON p.hostname = c.hostname AND p.service_name = c.service_name AND p.position = c.position
WHERE c.hostname = ?1 AND c.service_name = ?2
ORDER BY c.position, p.pid)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(hostname, service);
  std::vector<HostContainer> containers;
  int64_t last_position = -1;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    if (select->int64(0) != last_position) {
      last_position = select->int64(0);
      containers.push_back({select->optional_text(1),
                            select->text(2),
                            select->optional_text(3),
                            select->optional_text(4),
                            select->optional_text(5),
                            select->optional_text(6),
                            select->optional_text(7),
                            {}});
    }
    if (!select->is_null(8)) {
      containers.back().processes.push_back({select->int64(8), select->text(9)});
    }
  }
  return containers;
}

Result<std::optional<HostInventory>> read_host_inventory(Database& db, const std::string& hostname,
                                                         const std::string& service,
                                                         TimePoint active_since) {
  auto host = db.prepare(
      "SELECT ip_address FROM hosts WHERE hostname = ?1 AND service_name = ?2 AND "
      "last_heartbeat_ms >= ?3");
  if (!host) return std::move(host).take_error();
  host->bind_all(hostname, service, to_unix_ms(active_since));
  auto found = host->step();
  if (!found) return std::move(found).take_error();
  if (!*found) return std::optional<HostInventory>();
  HostInventory inventory{hostname, host->text(0), {}};

  auto rows = db.prepare(R"sql(
SELECT c.namespace, c.workload_name, c.workload_kind, c.pod_name, c.container_name,
       p.process_name, p.pid
FROM host_containers c JOIN host_processes p
  ON p.hostname = c.hostname AND p.service_name = c.service_name AND p.position = c.position
WHERE c.hostname = ?1 AND c.service_name = ?2)sql");
  if (!rows) return std::move(rows).take_error();
  rows->bind_all(hostname, service);
  for (;;) {
    auto row = rows->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    inventory.processes.push_back({rows->optional_text(0), rows->optional_text(1),
                                   rows->optional_text(2), rows->optional_text(3), rows->text(4),
                                   rows->text(5), static_cast<pid_t>(rows->int64(6))});
  }
  return std::optional<HostInventory>(std::move(inventory));
}

}  // namespace dormant::server::storage
