#include "server/storage/host_rows.h"

#include "server/storage/json_columns.h"

namespace dormant::server::storage {

Result<void> upsert_host(Database& db, const HostHeartbeat& heartbeat, TimePoint now) {
  auto upsert = db.prepare(R"sql(
INSERT INTO hosts (hostname, service_name, ip_address, agent_version, run_mode, status,
                   first_heartbeat_ms, last_heartbeat_ms, agent_timestamp, last_command_id,
                   received_command_ids, executed_command_ids, supported_perf_events,
                   agent_health, extra)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
ON CONFLICT (hostname, service_name) DO UPDATE SET
  ip_address = excluded.ip_address, agent_version = excluded.agent_version,
  run_mode = excluded.run_mode, status = excluded.status,
  last_heartbeat_ms = excluded.last_heartbeat_ms, agent_timestamp = excluded.agent_timestamp,
  last_command_id = excluded.last_command_id,
  received_command_ids = excluded.received_command_ids,
  executed_command_ids = excluded.executed_command_ids,
  supported_perf_events = excluded.supported_perf_events,
  agent_health = excluded.agent_health, extra = excluded.extra)sql");
  if (!upsert) return std::move(upsert).take_error();
  std::optional<std::string> health;
  if (heartbeat.agent_health) health = json_text(*heartbeat.agent_health);
  return upsert
      ->bind_all(heartbeat.hostname, heartbeat.service_name, heartbeat.ip_address,
                 heartbeat.agent_version, heartbeat.run_mode, to_string(heartbeat.status),
                 to_unix_ms(now), heartbeat.agent_timestamp, heartbeat.last_command_id,
                 strings_to_json(heartbeat.received_command_ids),
                 strings_to_json(heartbeat.executed_command_ids),
                 strings_to_json(heartbeat.perf_supported_events), health,
                 json_text(heartbeat.extra))
      .run();
}

Result<std::vector<HostRecord>> find_hosts(Database& db, const HostFilter& filter) {
  auto select = db.prepare(R"sql(
SELECT hostname, service_name, ip_address, agent_version, run_mode, status, first_heartbeat_ms,
       last_heartbeat_ms, agent_timestamp, last_command_id, received_command_ids,
       executed_command_ids, supported_perf_events, agent_health, extra
FROM hosts
WHERE (CAST(?1 AS TEXT) IS NULL OR hostname = ?1) AND (CAST(?2 AS TEXT) IS NULL OR service_name = ?2)
  AND (CAST(?4 AS TEXT) IS NULL OR service_name > ?4 OR (service_name = ?4 AND hostname > ?5))
ORDER BY service_name, hostname
LIMIT ?3)sql");
  if (!select) return std::move(select).take_error();
  std::optional<std::string> after_service, after_host;
  if (filter.after) {
    after_service = filter.after->first;
    after_host = filter.after->second;
  }
  select->bind_all(filter.hostname, filter.service_name, sql_limit(filter.limit), after_service,
                   after_host);
  std::vector<HostRecord> hosts;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    HostRecord host;
    HostHeartbeat& beat = host.last_heartbeat;
    beat.hostname = select->text(0);
    beat.service_name = select->text(1);
    beat.ip_address = select->text(2);
    beat.agent_version = select->optional_text(3);
    beat.run_mode = select->optional_text(4);
    auto status = parse_host_status(select->text(5));
    if (!status) return Error::parse("column hosts.status holds \"" + select->text(5) + "\"");
    beat.status = *status;
    host.first_heartbeat_at = from_unix_ms(select->int64(6));
    host.last_heartbeat_at = from_unix_ms(select->int64(7));
    beat.agent_timestamp = select->optional_text(8);
    beat.last_command_id = select->optional_text(9);
    auto received = strings_from_json(select->text(10), "hosts.received_command_ids");
    auto executed = strings_from_json(select->text(11), "hosts.executed_command_ids");
    auto events = strings_from_json(select->text(12), "hosts.supported_perf_events");
    auto extra = parse_json_column(select->text(14), "hosts.extra");
    if (!received) return std::move(received).take_error();
    if (!executed) return std::move(executed).take_error();
    if (!events) return std::move(events).take_error();
    if (!extra) return std::move(extra).take_error();
    beat.received_command_ids = std::move(*received);
    beat.executed_command_ids = std::move(*executed);
    beat.perf_supported_events = std::move(*events);
    beat.extra = std::move(*extra);
    if (auto health = select->optional_text(13)) {
      auto parsed = parse_json_column(*health, "hosts.agent_health");
      if (!parsed) return std::move(parsed).take_error();
      beat.agent_health = std::move(*parsed);
    }
    hosts.push_back(std::move(host));
  }
  return hosts;
}

Result<std::map<std::string, std::vector<std::string>>> find_perf_events(
    Database& db, const std::string& service) {
  auto select =
      db.prepare("SELECT hostname, supported_perf_events FROM hosts WHERE service_name = ?1");
  if (!select) return std::move(select).take_error();
  select->bind_all(service);
  std::map<std::string, std::vector<std::string>> events;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    auto listed = strings_from_json(select->text(1), "hosts.supported_perf_events");
    if (!listed) return std::move(listed).take_error();
    events[select->text(0)] = std::move(*listed);
  }
  return events;
}

Result<std::set<std::string>> find_known_hosts(Database& db, const std::string& service,
                                               const std::vector<std::string>& hostnames) {
  constexpr size_t kHostsPerQuery = 256;
  std::set<std::string> known;
  for (size_t first = 0; first < hostnames.size(); first += kHostsPerQuery) {
    size_t count = std::min(kHostsPerQuery, hostnames.size() - first);
    auto select =
        db.prepare("SELECT hostname FROM hosts WHERE service_name = ?1 AND hostname IN (" +
                   numbered_parameters(2, count) + ")");
    if (!select) return std::move(select).take_error();
    select->bind(1, service);
    for (size_t i = 0; i < count; ++i) select->bind(static_cast<int>(i + 2), hostnames[first + i]);
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      known.insert(select->text(0));
    }
  }
  return known;
}

Result<int64_t> delete_hosts_before(Database& db, TimePoint cutoff, int64_t batch) {
  // The outer condition again: a heartbeat that updates a host meanwhile keeps it.
  auto remove = db.prepare(R"sql(
DELETE FROM hosts
WHERE last_heartbeat_ms < ?1
  AND (hostname, service_name) IN (SELECT hostname, service_name FROM hosts
                                   WHERE last_heartbeat_ms < ?1
                                   ORDER BY last_heartbeat_ms LIMIT ?2))sql");
  if (!remove) return std::move(remove).take_error();
  if (auto done = remove->bind_all(to_unix_ms(cutoff), batch).run(); !done) {
    return std::move(done).take_error();
  }
  return db.changes();
}

}  // namespace dormant::server::storage
