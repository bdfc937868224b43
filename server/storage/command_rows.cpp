#include "server/storage/command_rows.h"

#include <algorithm>

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

enum class Args { kInline, kByDigest };

// The columns read_row() reads, the request ids as a JSON array last but one. kByDigest: the
// arguments' digest only, their text NULL.
std::string select_commands(const Database& db, Args args = Args::kInline) {
  std::string request_ids = db.dialect() == Dialect::kPostgres
                                ? "COALESCE(json_agg(request_id), '[]'::json)::text"
                                : "json_group_array(request_id)";
  std::string args_text =
      args == Args::kInline
          ? "(SELECT args FROM additional_args WHERE additional_args.digest = commands.args_digest)"
          : "NULL";
  return R"sql(
SELECT command_id, hostname, service_name, command_type, pids, stop_level, continuous, duration,
       frequency, profiling_mode, )sql" +
         args_text + R"sql(,
       status, created_ms, sent_ms, completed_ms, execution_time, error_message, results_path,
       replaced_by, replaced_ms,
       (SELECT )sql" +
         request_ids + R"sql( FROM command_requests
        WHERE command_requests.command_id = commands.command_id),
       rowid, args_digest
FROM commands
)sql";
}

std::optional<TimePoint> optional_time(const Statement& row, int column) {
  auto ms = row.optional_int64(column);
  if (!ms) return std::nullopt;
  return from_unix_ms(*ms);
}

template <typename Enum>
Result<Enum> enum_column(const Statement& row, int column,
                         std::optional<Enum> (*parse)(std::string_view), std::string_view name) {
  std::string text = row.text(column);
  auto value = parse(text);
  if (!value) return Error::parse("column " + std::string(name) + " holds \"" + text + "\"");
  return *value;
}

Result<CommandRow> read_row(const Statement& row) {
  CommandRow out;
  Command& command = out.command;
  CommandSpec& spec = out.spec;
  command.command_id = row.text(0);
  command.hostname = row.text(1);
  command.service_name = row.text(2);
  auto type = enum_column(row, 3, parse_command_type, "commands.command_type");
  if (!type) return std::move(type).take_error();
  command.type = spec.type = *type;
  auto pids = pids_from_json(row.optional_text(4), "commands.pids");
  if (!pids) return std::move(pids).take_error();
  spec.pids = std::move(*pids);
  if (!row.is_null(5)) {
    auto level = enum_column(row, 5, parse_stop_level, "commands.stop_level");
    if (!level) return std::move(level).take_error();
    spec.stop_level = *level;
  }
  if (spec.type == CommandType::kStart) {
    spec.continuous = row.boolean(6);
    spec.duration_s = row.int64(7);
    spec.frequency_hz = row.int64(8);
    auto mode = enum_column(row, 9, parse_profiling_mode, "commands.profiling_mode");
    if (!mode) return std::move(mode).take_error();
    spec.mode = *mode;
    if (!row.is_null(10)) {  // else read by digest
      auto args = parse_json_column(row.text(10), "additional_args.args");
      if (!args) return std::move(args).take_error();
      spec.additional_args = std::move(*args);
    }
  }
  // What the agent receives follows from the rest: kept, it repeated the arguments in every row.
  command.combined_config = build_combined_config(spec);
  auto status = enum_column(row, 11, parse_command_status, "commands.status");
  if (!status) return std::move(status).take_error();
  command.status = *status;
  command.created_at = from_unix_ms(row.int64(12));
  command.sent_at = optional_time(row, 13);
  command.completed_at = optional_time(row, 14);
  command.execution_time = row.optional_int64(15);
  command.error_message = row.optional_text(16);
  command.results_path = row.optional_text(17);
  command.replaced_by = row.optional_text(18);
  command.replaced_at = optional_time(row, 19);
  auto requests = strings_from_json(row.text(20), "command_requests.request_id");
  if (!requests) return std::move(requests).take_error();
  command.request_ids = std::move(*requests);
  command.position = {row.int64(12), row.int64(21)};
  command.args_digest = row.optional_text(22);
  return out;
}

// Calls take(CommandRow&&) with each row the statement gives, in order.
template <typename Take>
Result<void> each_command_row(Statement& statement, const Take& take) {
  for (;;) {
    auto row = statement.step();
    if (!row) return std::move(row).take_error();
    if (!*row) return ok();
    auto command = read_row(statement);
    if (!command) return std::move(command).take_error();
    take(std::move(*command));
  }
}

Result<std::vector<Command>> read_commands(Statement& statement) {
  std::vector<Command> commands;
  auto read = each_command_row(
      statement, [&](CommandRow&& row) { commands.push_back(std::move(row.command)); });
  if (!read) return std::move(read).take_error();
  return commands;
}

Result<std::optional<CommandRow>> find_one(Statement& statement) {
  auto row = statement.step();
  if (!row) return std::move(row).take_error();
  if (!*row) return std::optional<CommandRow>();
  auto command = read_row(statement);
  if (!command) return std::move(command).take_error();
  return std::optional<CommandRow>(std::move(*command));
}

}  // namespace

Result<std::optional<CommandRow>> find_command(Database& db, const std::string& command_id) {
  auto statement = db.prepare(select_commands(db) + "WHERE command_id = ?1");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(command_id);
  return find_one(*statement);
}

Result<std::optional<CommandRow>> find_current_command(Database& db, const std::string& hostname,
                                                       const std::string& service_name) {
  auto statement = db.prepare(select_commands(db) +
                              "WHERE hostname = ?1 AND service_name = ?2 AND replaced_by IS NULL");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(hostname, service_name);
  return find_one(*statement);
}

Result<std::map<std::string, CommandRow>> find_current_commands(
    Database& db, const std::string& service, const std::vector<std::string>& hostnames) {
  constexpr size_t kHostsPerQuery = 256;
  std::map<std::string, CommandRow> current;
  for (size_t first = 0; first < hostnames.size(); first += kHostsPerQuery) {
    size_t count = std::min(kHostsPerQuery, hostnames.size() - first);
    auto statement = db.prepare(
        select_commands(db) + "WHERE service_name = ?1 AND replaced_by IS NULL AND hostname IN (" +
        numbered_parameters(2, count) + ")");
    if (!statement) return std::move(statement).take_error();
    statement->bind(1, service);
    for (size_t i = 0; i < count; ++i) {
      statement->bind(static_cast<int>(i + 2), hostnames[first + i]);
    }
    auto read = each_command_row(*statement, [&](CommandRow&& row) {
      std::string hostname = row.command.hostname;
      current.emplace(std::move(hostname), std::move(row));
    });
    if (!read) return std::move(read).take_error();
  }
  return current;
}

Result<std::vector<Command>> find_commands(Database& db, const CommandFilter& filter) {
  Args args = filter.args_by_digest ? Args::kByDigest : Args::kInline;
  auto statement = db.prepare(select_commands(db, args) + R"sql(
WHERE (CAST(?1 AS TEXT) IS NULL OR hostname = ?1)
  AND (CAST(?2 AS TEXT) IS NULL OR service_name = ?2)
  AND (?3 = 1 OR replaced_by IS NULL)
  AND (CAST(?5 AS BIGINT) IS NULL OR created_ms < ?5 OR (created_ms = ?5 AND rowid < ?6))
ORDER BY created_ms DESC, rowid DESC
LIMIT ?4)sql");
  if (!statement) return std::move(statement).take_error();
  std::optional<int64_t> before_ms, before_row;
  if (filter.before) {
    before_ms = filter.before->created_ms;
    before_row = filter.before->row;
  }
  statement->bind_all(filter.hostname, filter.service_name, filter.include_history,
                      sql_limit(filter.limit), before_ms, before_row);
  return read_commands(*statement);
}

Result<std::vector<Command>> find_current_commands_of_hosts_since(
    Database& db, TimePoint since, const std::optional<std::string>& service) {
  auto statement = db.prepare(select_commands(db) + R"sql(
WHERE replaced_by IS NULL AND (CAST(?2 AS TEXT) IS NULL OR service_name = ?2)
  AND EXISTS (SELECT 1 FROM hosts h WHERE h.hostname = commands.hostname
              AND h.service_name = commands.service_name AND h.last_heartbeat_ms >= ?1))sql");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(to_unix_ms(since), service);
  return read_commands(*statement);
}

Result<void> insert_command(Database& db, const CommandRow& row, ArgsWriter& args) {
  const Command& command = row.command;
  const CommandSpec& spec = row.spec;
  std::optional<std::string> args_digest;
  if (spec.type == CommandType::kStart) {
    auto stored = args.store(db, spec.additional_args);
    if (!stored) return std::move(stored).take_error();
    args_digest = std::move(*stored);
  }
  auto insert = db.prepare(R"sql(
INSERT INTO commands (command_id, hostname, service_name, command_type, pids, stop_level,
                      continuous, duration, frequency, profiling_mode, args_digest, status,
                      created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))sql");
  if (!insert) return std::move(insert).take_error();
  insert->bind_all(command.command_id, command.hostname, command.service_name,
                   to_string(command.type), pids_to_json(spec.pids),
                   spec.stop_level ? std::optional(to_string(*spec.stop_level)) : std::nullopt);
  if (spec.type == CommandType::kStart) {
    insert->bind(7, spec.continuous)
        .bind(8, spec.duration_s)
        .bind(9, spec.frequency_hz)
        .bind(10, to_string(spec.mode));
  } else {
    for (int index = 7; index <= 10; ++index) insert->bind(index, std::nullopt);
  }
  insert->bind(11, args_digest)
      .bind(12, to_string(command.status))
      .bind(13, to_unix_ms(command.created_at));
  if (auto inserted = insert->run(); !inserted) return inserted;

  auto link = db.prepare("INSERT INTO command_requests (command_id, request_id) VALUES (?1, ?2)");
  if (!link) return std::move(link).take_error();
  for (const std::string& request_id : command.request_ids) {
    if (auto linked = link->bind_all(command.command_id, request_id).run(); !linked) return linked;
  }
  return ok();
}

Result<void> mark_replaced(Database& db, const std::string& command_id,
                           const std::string& replaced_by, TimePoint at) {
  auto update = db.prepare(
      "UPDATE commands SET replaced_by = ?2, replaced_ms = ?3 WHERE command_id = ?1 AND "
      "replaced_by IS NULL");
  if (!update) return std::move(update).take_error();
  if (auto done = update->bind_all(command_id, replaced_by, to_unix_ms(at)).run(); !done) {
    return done;
  }
  if (db.changes() != 1) {
    return Error(ErrorKind::kNotFound, "command " + command_id + " is not a current command");
  }
  return ok();
}

Result<void> mark_delivered(Database& db, const Command& command, TimePoint at) {
  auto update = db.prepare(
      "UPDATE commands SET status = 'sent', sent_ms = ?2 WHERE command_id = ?1 AND status = "
      "'pending'");
  if (!update) return std::move(update).take_error();
  if (auto done = update->bind_all(command.command_id, to_unix_ms(at)).run(); !done) return done;
  auto executions = db.prepare(R"sql(
INSERT INTO executions (command_id, request_id, hostname, status, delivered_ms)
SELECT command_id, request_id, CAST(?2 AS TEXT), 'assigned', CAST(?3 AS BIGINT)
FROM command_requests WHERE command_id = ?1
ON CONFLICT DO NOTHING)sql");
  if (!executions) return std::move(executions).take_error();
  return executions->bind_all(command.command_id, command.hostname, to_unix_ms(at)).run();
}

Result<void> mark_reported(Database& db, const CompletionReport& report, TimePoint at) {
  auto update = db.prepare(R"sql(
UPDATE commands SET status = ?2, completed_ms = ?3, execution_time = ?4, error_message = ?5,
                    results_path = ?6
WHERE command_id = ?1 AND status = 'sent')sql");
  if (!update) return std::move(update).take_error();
  update->bind_all(report.command_id, to_string(report.status), to_unix_ms(at),
                   report.execution_time, report.error_message, report.results_path);
  if (auto done = update->run(); !done) return done;
  auto executions = db.prepare(
      "UPDATE executions SET status = ?2, reported_ms = ?3 WHERE command_id = ?1 AND status = "
      "'assigned'");
  if (!executions) return std::move(executions).take_error();
  return executions->bind_all(report.command_id, to_string(report.status), to_unix_ms(at)).run();
}

Result<void> mark_session_failed(Database& db, const CompletionReport& report, TimePoint at) {
  auto update = db.prepare(R"sql(
UPDATE commands SET status = 'failed', completed_ms = ?2, error_message = ?3
WHERE command_id = ?1 AND status = 'completed' AND command_type = 'start')sql");
  if (!update) return std::move(update).take_error();
  update->bind_all(report.command_id, to_unix_ms(at), report.error_message);
  if (auto done = update->run(); !done) return done;
  auto executions = db.prepare(
      "UPDATE executions SET status = 'failed', reported_ms = ?2 WHERE command_id = ?1 AND "
      "status = 'completed'");
  if (!executions) return std::move(executions).take_error();
  return executions->bind_all(report.command_id, to_unix_ms(at)).run();
}

Result<int64_t> delete_history_before(Database& db, TimePoint cutoff, int64_t batch) {
  // The same rows for the three deletes: within the transaction, nothing else changes them. A
  // command is inserted after the one it replaced (rowid order), so a command is never deleted
  // before its predecessor; one whose predecessor must stay (a clock that went back) stays too.
  constexpr std::string_view kBatch = R"sql(
(SELECT command_id FROM commands
 WHERE replaced_by IS NOT NULL AND replaced_ms < ?1
   AND NOT EXISTS (SELECT 1 FROM commands AS predecessor
                   WHERE predecessor.replaced_by = commands.command_id
                     AND predecessor.replaced_ms >= ?1)
 ORDER BY rowid LIMIT ?2))sql";
  int64_t deleted = 0;
  for (std::string_view table : {"executions", "command_requests", "commands"}) {
    auto remove = db.prepare("DELETE FROM " + std::string(table) + " WHERE command_id IN " +
                             std::string(kBatch));
    if (!remove) return std::move(remove).take_error();
    if (auto done = remove->bind_all(to_unix_ms(cutoff), batch).run(); !done) {
      return std::move(done).take_error();
    }
    deleted = db.changes();
  }
  return deleted;
}

}  // namespace dormant::server::storage
