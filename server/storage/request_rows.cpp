#include "server/storage/request_rows.h"

#include "server/storage/json_columns.h"

namespace dormant::server::storage {

Result<void> insert_request(Database& db, const ProfilingRequestRecord& request, ArgsWriter& args) {
  std::optional<std::string> args_digest;
  if (request.additional_args) {
    auto stored = args.store(db, *request.additional_args);
    if (!stored) return std::move(stored).take_error();
    args_digest = std::move(*stored);
  }
  auto insert = db.prepare(R"sql(
INSERT INTO profiling_requests (request_id, service_name, request_type, target_hosts, continuous,
                                duration, frequency, profiling_mode, args_digest, stop_level,
                                status, created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql");
  if (!insert) return std::move(insert).take_error();
  return insert
      ->bind_all(request.request_id, request.service_name, to_string(request.type),
                 target_hosts_to_json(request.target_hosts), request.continuous, request.duration_s,
                 request.frequency_hz,
                 request.mode ? std::optional(to_string(*request.mode)) : std::nullopt, args_digest,
                 request.stop_level ? std::optional(to_string(*request.stop_level)) : std::nullopt,
                 to_string(request.status), to_unix_ms(request.created_at))
      .run();
}

Result<void> set_request_status(Database& db, const std::string& request_id, RequestStatus status) {
  auto update = db.prepare("UPDATE profiling_requests SET status = ?2 WHERE request_id = ?1");
  if (!update) return std::move(update).take_error();
  return update->bind_all(request_id, to_string(status)).run();
}

Result<std::optional<ProfilingRequestRecord>> find_request(Database& db,
                                                           const std::string& request_id) {
  auto select = db.prepare(R"sql(
SELECT request_id, service_name, request_type, target_hosts, continuous, duration, frequency,
       profiling_mode,
       (SELECT args FROM additional_args WHERE additional_args.digest = profiling_requests.args_digest),
       stop_level, status, created_ms
FROM profiling_requests WHERE request_id = ?1)sql");
  if (!select) return std::move(select).take_error();
  auto row = select->bind_all(request_id).step();
  if (!row) return std::move(row).take_error();
  if (!*row) return std::optional<ProfilingRequestRecord>();

  ProfilingRequestRecord request;
  request.request_id = select->text(0);
  request.service_name = select->text(1);
  auto type = parse_command_type(select->text(2));
  auto status = parse_request_status(select->text(10));
  if (!type || !status) {
    return Error::parse("profiling request " + request_id + " has an unknown type or status");
  }
  request.type = *type;
  request.status = *status;
  auto hosts = target_hosts_from_json(select->text(3), "profiling_requests.target_hosts");
  if (!hosts) return std::move(hosts).take_error();
  request.target_hosts = std::move(*hosts);
  if (!select->is_null(4)) request.continuous = select->boolean(4);
  request.duration_s = select->optional_int64(5);
  request.frequency_hz = select->optional_int64(6);
  if (auto mode = select->optional_text(7)) request.mode = parse_profiling_mode(*mode);
  if (auto args = select->optional_text(8)) {
    auto parsed = parse_json_column(*args, "additional_args.args");
    if (!parsed) return std::move(parsed).take_error();
    request.additional_args = std::move(*parsed);
  }
  if (auto level = select->optional_text(9)) request.stop_level = parse_stop_level(*level);
  request.created_at = from_unix_ms(select->int64(11));
  return std::optional<ProfilingRequestRecord>(std::move(request));
}

Result<void> advance_requests(Database& db, const std::string& command_id, RequestStatus status) {
  auto update = db.prepare(R"sql(
UPDATE profiling_requests SET status = ?2
WHERE request_id IN (SELECT request_id FROM command_requests WHERE command_id = ?1)
  AND (status = 'pending' OR (status = 'assigned' AND ?2 <> 'assigned')))sql");
  if (!update) return std::move(update).take_error();
  return update->bind_all(command_id, to_string(status)).run();
}

Result<int64_t> delete_requests_before(Database& db, TimePoint cutoff, int64_t batch) {
  auto remove = db.prepare(R"sql(
DELETE FROM profiling_requests WHERE request_id IN (
  SELECT request_id FROM profiling_requests AS request
  WHERE created_ms < ?1
    AND NOT EXISTS (SELECT 1 FROM command_requests AS link
                    WHERE link.request_id = request.request_id)
    AND NOT EXISTS (SELECT 1 FROM executions WHERE executions.request_id = request.request_id)
    AND NOT EXISTS (SELECT 1 FROM subscriptions AS s
                    WHERE s.request_id = request.request_id AND s.ended_ms IS NULL)
  ORDER BY created_ms LIMIT ?2))sql");
  if (!remove) return std::move(remove).take_error();
  if (auto done = remove->bind_all(to_unix_ms(cutoff), batch).run(); !done) {
    return std::move(done).take_error();
  }
  return db.changes();
}

}  // namespace dormant::server::storage
