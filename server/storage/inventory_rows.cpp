#include "server/storage/inventory_rows.h"

#include <cstdint>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

nlohmann::json optional_json(const std::optional<std::string>& text) {
  return text ? nlohmann::json(*text) : nlohmann::json(nullptr);
}

// What the digest is taken of: every field, in order.
std::string canonical_text(const std::vector<HostContainer>& containers) {
  nlohmann::json list = nlohmann::json::array();
  for (const HostContainer& c : containers) {
    nlohmann::json processes = nlohmann::json::array();
    for (const HostProcess& p : c.processes) processes.push_back({p.pid, p.process_name});
    list.push_back({optional_json(c.container_id), c.container_name, optional_json(c.runtime),
                    optional_json(c.pod_namespace), optional_json(c.pod_name),
                    optional_json(c.workload_name), optional_json(c.workload_kind),
                    std::move(processes)});
  }
  return json_text(list);
}

}  // namespace

Result<bool> sync_inventory(Database& db, const std::string& hostname, const std::string& service,
                            const std::vector<HostContainer>& containers) {
  std::vector<HostContainer> kept = containers;
  std::unordered_set<int64_t> seen;
  int64_t processes = 0;
  for (HostContainer& container : kept) {
    std::erase_if(container.processes,
                  [&](const HostProcess& process) { return !seen.insert(process.pid).second; });
    processes += static_cast<int64_t>(container.processes.size());
  }
  auto mark = db.prepare(R"sql(
UPDATE hosts SET inventory_digest = ?3, inventory_containers = ?4, inventory_processes = ?5
WHERE hostname = ?1 AND service_name = ?2
  AND (inventory_digest IS NULL OR inventory_digest <> ?3))sql");
  if (!mark) return std::move(mark).take_error();
  auto marked = mark->bind_all(hostname, service, text_digest(canonical_text(kept)),
                               static_cast<int64_t>(kept.size()), processes)
                    .run();
  if (!marked) return std::move(marked).take_error();
  if (db.changes() == 0) return false;

  for (std::string_view sql :
       {"DELETE FROM host_processes WHERE hostname = ?1 AND service_name = ?2",
        "DELETE FROM host_containers WHERE hostname = ?1 AND service_name = ?2"}) {
    auto remove = db.prepare(sql);
    if (!remove) return std::move(remove).take_error();
    if (auto done = remove->bind_all(hostname, service).run(); !done) {
      return std::move(done).take_error();
    }
  }
  auto insert_container = db.prepare(R"sql(
INSERT INTO host_containers (hostname, service_name, position, container_id, container_name,
                             runtime, namespace, pod_name, workload_name, workload_kind,
                             process_count)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11))sql");
  if (!insert_container) return std::move(insert_container).take_error();
  auto insert_process = db.prepare(R"sql(
INSERT INTO host_processes (hostname, service_name, position, pid, process_name)
VALUES (?1, ?2, ?3, ?4, ?5))sql");
  if (!insert_process) return std::move(insert_process).take_error();
  for (size_t position = 0; position < kept.size(); ++position) {
    const HostContainer& c = kept[position];
    auto position64 = static_cast<int64_t>(position);
    auto inserted = insert_container
                        ->bind_all(hostname, service, position64, c.container_id, c.container_name,
                                   c.runtime, c.pod_namespace, c.pod_name, c.workload_name,
                                   c.workload_kind, static_cast<int64_t>(c.processes.size()))
                        .run();
    if (!inserted) return std::move(inserted).take_error();
    for (const HostProcess& p : c.processes) {
      auto done =
          insert_process->bind_all(hostname, service, position64, p.pid, p.process_name).run();
      if (!done) return std::move(done).take_error();
    }
  }
  return true;
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

}  // namespace dormant::server::storage
