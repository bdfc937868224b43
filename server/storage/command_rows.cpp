#include "server/storage/command_rows.h"

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kSelectCommands = R"sql(
SELECT command_id, hostname, service_name, command_type, pids, stop_level, continuous, duration,
       frequency, profiling_mode, additional_args, combined_config, status, created_ms, sent_ms,
       completed_ms, execution_time, error_message, results_path, replaced_by, replaced_ms,
       (SELECT json_group_array(request_id) FROM command_requests
        WHERE command_requests.command_id = commands.command_id)
FROM commands
)sql";

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
    auto args = parse_json_column(row.text(10), "commands.additional_args");
    if (!args) return std::move(args).take_error();
    spec.additional_args = std::move(*args);
  }
  auto config = parse_json_column(row.text(11), "commands.combined_config");
  if (!config) return std::move(config).take_error();
  command.combined_config = std::move(*config);
  auto status = enum_column(row, 12, parse_command_status, "commands.status");
  if (!status) return std::move(status).take_error();
  command.status = *status;
  command.created_at = from_unix_ms(row.int64(13));
  command.sent_at = optional_time(row, 14);
  command.completed_at = optional_time(row, 15);
  command.execution_time = row.optional_int64(16);
  command.error_message = row.optional_text(17);
  command.results_path = row.optional_text(18);
  command.replaced_by = row.optional_text(19);
  command.replaced_at = optional_time(row, 20);
  auto requests = strings_from_json(row.text(21), "command_requests.request_id");
  if (!requests) return std::move(requests).take_error();
  command.request_ids = std::move(*requests);
  return out;
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
  auto statement = db.prepare(std::string(kSelectCommands) + "WHERE command_id = ?1");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(command_id);
  return find_one(*statement);
}

Result<std::optional<CommandRow>> find_current_command(Database& db, const std::string& hostname,
                                                       const std::string& service_name) {
  auto statement = db.prepare(std::string(kSelectCommands) +
                              "WHERE hostname = ?1 AND service_name = ?2 AND replaced_by IS NULL");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(hostname, service_name);
  return find_one(*statement);
}

Result<std::vector<Command>> find_commands(Database& db, const CommandFilter& filter) {
  auto statement = db.prepare(std::string(kSelectCommands) + R"sql(
WHERE (?1 IS NULL OR hostname = ?1) AND (?2 IS NULL OR service_name = ?2)
  AND (?3 OR replaced_by IS NULL)
ORDER BY created_ms DESC, rowid DESC
LIMIT ?4)sql");
  if (!statement) return std::move(statement).take_error();
  statement->bind_all(filter.hostname, filter.service_name, filter.include_history, filter.limit);
  std::vector<Command> commands;
  for (;;) {
    auto row = statement->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    auto command = read_row(*statement);
    if (!command) return std::move(command).take_error();
    commands.push_back(std::move(command->command));
  }
  return commands;
}

Result<void> insert_command(Database& db, const CommandRow& row) {
  const Command& command = row.command;
  const CommandSpec& spec = row.spec;
  auto insert = db.prepare(R"sql(
INSERT INTO commands (command_id, hostname, service_name, command_type, pids, stop_level,
                      continuous, duration, frequency, profiling_mode, additional_args,
                      combined_config, status, created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))sql");
  if (!insert) return std::move(insert).take_error();
  insert->bind_all(command.command_id, command.hostname, command.service_name,
                   to_string(command.type), pids_to_json(spec.pids),
                   spec.stop_level ? std::optional(to_string(*spec.stop_level)) : std::nullopt);
  if (spec.type == CommandType::kStart) {
    insert->bind(7, spec.continuous)
        .bind(8, spec.duration_s)
        .bind(9, spec.frequency_hz)
        .bind(10, to_string(spec.mode))
        .bind(11, json_text(spec.additional_args));
  } else {
    for (int index = 7; index <= 11; ++index) insert->bind(index, std::nullopt);
  }
  insert->bind(12, json_text(command.combined_config))
      .bind(13, to_string(command.status))
      .bind(14, to_unix_ms(command.created_at));
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
INSERT OR IGNORE INTO executions (command_id, request_id, hostname, status, delivered_ms)
SELECT command_id, request_id, ?2, 'assigned', ?3 FROM command_requests WHERE command_id = ?1)sql");
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

}  // namespace dormant::server::storage
