#include "server/storage/studio_rows.h"

namespace dormant::server::storage {

Result<std::vector<HostSlotMetrics>> read_upload_metrics(Database& db,
                                                         const UploadMetricsQuery& query) {
  auto select = db.prepare(R"sql(
SELECT start_ms / CAST(?4 AS BIGINT), hostname, instance_type, COUNT(*),
       COUNT(cpu_avg), COALESCE(SUM(cpu_avg), 0), COALESCE(MAX(cpu_avg), 0),
       COUNT(mem_avg), COALESCE(SUM(mem_avg), 0), COALESCE(MAX(mem_avg), 0),
       SUM(end_ms - start_ms), MAX(processors), MIN(start_ms), MAX(end_ms)
FROM profiles
WHERE service_name = ?1 AND start_ms >= ?2 AND start_ms < ?3
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3)sql");
  if (!select) return std::move(select).take_error();
  const int64_t slot_ms = std::max<int64_t>(1, query.slot_ms);
  select->bind_all(query.service, query.from_ms, query.to_ms, slot_ms);
  std::vector<HostSlotMetrics> rows;
  while (true) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    HostSlotMetrics metrics;
    metrics.slot_ms = select->int64(0) * slot_ms;
    metrics.hostname = select->text(1);
    metrics.instance_type = select->text(2);
    metrics.uploads = select->int64(3);
    metrics.cpu_values = select->int64(4);
    metrics.cpu_sum = select->float64(5);
    metrics.cpu_max = select->float64(6);
    metrics.memory_values = select->int64(7);
    metrics.memory_sum = select->float64(8);
    metrics.memory_max = select->float64(9);
    metrics.profiled_ms = select->int64(10);
    metrics.processors = select->int64(11);
    metrics.first_start_ms = select->int64(12);
    metrics.last_end_ms = select->int64(13);
    rows.push_back(std::move(metrics));
  }
  select->reset();
  return rows;
}

Result<void> note_host_processors(Database& db, const std::string& hostname,
                                  const std::string& service, int64_t processors) {
  auto update = db.prepare(R"sql(
UPDATE hosts SET processors = ?3
WHERE hostname = ?1 AND service_name = ?2 AND processors <> ?3)sql");
  if (!update) return std::move(update).take_error();
  return update->bind_all(hostname, service, processors).run();
}

Result<std::vector<ServiceHost>> read_service_hosts(Database& db, int64_t since_ms) {
  auto select = db.prepare(R"sql(
SELECT h.service_name, h.hostname, h.first_heartbeat_ms, h.last_heartbeat_ms, h.agent_version,
       h.processors,
       EXISTS (SELECT 1 FROM host_containers c
               WHERE c.hostname = h.hostname AND c.service_name = h.service_name
                 AND (c.container_name <> '' OR COALESCE(c.container_id, '') <> '')),
       EXISTS (SELECT 1 FROM host_containers c
               WHERE c.hostname = h.hostname AND c.service_name = h.service_name
                 AND c.pod_name IS NOT NULL AND c.pod_name <> '')
FROM hosts h
WHERE h.last_heartbeat_ms >= ?1
ORDER BY h.service_name, h.hostname)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(since_ms);
  std::vector<ServiceHost> hosts;
  while (true) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    ServiceHost host;
    host.service = select->text(0);
    host.hostname = select->text(1);
    host.first_seen_ms = select->int64(2);
    host.last_seen_ms = select->int64(3);
    host.agent_version = select->optional_text(4);
    host.processors = select->int64(5);
    host.has_containers = select->boolean(6);  // the processes outside containers aside
    host.has_pods = select->boolean(7);
    hosts.push_back(std::move(host));
  }
  select->reset();
  return hosts;
}

Result<std::vector<ServiceDataSpan>> read_service_data_spans(Database& db, int64_t since_ms) {
  auto select = db.prepare(R"sql(
SELECT service_name, MIN(first_start_ms), MAX(last_end_ms)
FROM service_rollups
WHERE resolution_s IN (60, 86400) AND bucket_ms >= ?1
GROUP BY service_name
ORDER BY service_name)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(since_ms);
  std::vector<ServiceDataSpan> spans;
  while (true) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    spans.push_back({select->text(0), select->int64(1), select->int64(2)});
  }
  select->reset();
  return spans;
}

namespace {

Result<int64_t> count_rows(Database& db, std::string_view sql, const std::string* service) {
  auto count = db.prepare(sql);
  if (!count) return std::move(count).take_error();
  if (service != nullptr) count->bind_all(*service);
  auto row = count->step();
  if (!row) return std::move(row).take_error();
  int64_t rows = *row ? count->int64(0) : 0;
  count->reset();
  return rows;
}

Result<int64_t> inserted_id(Statement& insert) {
  auto row = insert.step();
  if (!row) return std::move(row).take_error();
  if (!*row) return Error(ErrorKind::kSystem, "an INSERT … RETURNING returned no row");
  int64_t id = insert.int64(0);
  insert.reset();
  return id;
}

Result<bool> changed_one(Database& db, Statement& statement) {
  if (auto ran = statement.run(); !ran) return std::move(ran).take_error();
  return db.changes() > 0;
}

}  // namespace

Result<int64_t> insert_saved_filter(Database& db, const SavedFilter& filter, int64_t now_ms,
                                    const SavedFilterCaps& caps) {
  auto kept =
      count_rows(db, "SELECT COUNT(*) FROM saved_filters WHERE service_name = ?1", &filter.service);
  if (!kept) return std::move(kept).take_error();
  if (*kept >= caps.per_service) {
    return Error::invalid_argument(filter.service + " keeps " + std::to_string(caps.per_service) +
                                   " saved filters, as many as a service may: delete one first");
  }
  auto all = count_rows(db, "SELECT COUNT(*) FROM saved_filters", nullptr);
  if (!all) return std::move(all).take_error();
  if (*all >= caps.in_all) {
    return Error::invalid_argument("the server keeps " + std::to_string(caps.in_all) +
                                   " saved filters, as many as it may: delete some first");
  }
  auto insert = db.prepare(R"sql(
INSERT INTO saved_filters (service_name, filter, created_ms) VALUES (?1, ?2, ?3)
RETURNING filter_id)sql");
  if (!insert) return std::move(insert).take_error();
  insert->bind_all(filter.service, filter.filter, now_ms);
  return inserted_id(*insert);
}

Result<bool> update_saved_filter(Database& db, int64_t id, const std::string& filter) {
  auto update = db.prepare("UPDATE saved_filters SET filter = ?2 WHERE filter_id = ?1");
  if (!update) return std::move(update).take_error();
  update->bind_all(id, filter);
  return changed_one(db, *update);
}

Result<bool> delete_saved_filter(Database& db, int64_t id) {
  auto remove = db.prepare("DELETE FROM saved_filters WHERE filter_id = ?1");
  if (!remove) return std::move(remove).take_error();
  remove->bind_all(id);
  return changed_one(db, *remove);
}

Result<std::vector<SavedFilter>> read_saved_filters(Database& db, const std::string& service) {
  auto select = db.prepare(
      "SELECT filter_id, filter FROM saved_filters WHERE service_name = ?1 ORDER BY filter_id");
  if (!select) return std::move(select).take_error();
  select->bind_all(service);
  std::vector<SavedFilter> filters;
  while (true) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    filters.push_back({select->int64(0), service, select->text(1)});
  }
  select->reset();
  return filters;
}

Result<int64_t> insert_snapshot(Database& db, const Snapshot& snapshot, int64_t now_ms,
                                int64_t most) {
  auto kept = count_rows(db, "SELECT COUNT(*) FROM snapshots", nullptr);
  if (!kept) return std::move(kept).take_error();
  if (*kept >= most) {
    return Error::invalid_argument("the server keeps " + std::to_string(most) +
                                   " snapshots, as many as it may");
  }
  auto insert = db.prepare(R"sql(
INSERT INTO snapshots (service_name, start_ms, end_ms, frames, filter, created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
RETURNING snapshot_id)sql");
  if (!insert) return std::move(insert).take_error();
  insert->bind_all(snapshot.service, snapshot.start_ms, snapshot.end_ms, snapshot.frames,
                   snapshot.filter, now_ms);
  return inserted_id(*insert);
}

Result<std::optional<Snapshot>> find_snapshot(Database& db, int64_t id) {
  auto select = db.prepare(
      "SELECT service_name, start_ms, end_ms, frames, filter FROM snapshots WHERE snapshot_id = "
      "?1");
  if (!select) return std::move(select).take_error();
  auto row = select->bind_all(id).step();
  if (!row) return std::move(row).take_error();
  if (!*row) {
    select->reset();
    return std::optional<Snapshot>();
  }
  Snapshot snapshot{id,
                    select->text(0),
                    select->int64(1),
                    select->int64(2),
                    select->text(3),
                    select->optional_text(4)};
  select->reset();
  return std::optional<Snapshot>(std::move(snapshot));
}

}  // namespace dormant::server::storage
