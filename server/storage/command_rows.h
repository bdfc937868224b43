// The commands table and the two that hang off it: command_requests (which requests a command
// carries out) and executions (its deliveries). Callers hold the transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/args_rows.h"
#include "server/storage/combined_config.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

Result<std::optional<CommandRow>> find_command(Database& db, const std::string& command_id);
Result<std::optional<CommandRow>> find_current_command(Database& db, const std::string& hostname,
                                                       const std::string& service_name);
// The current commands of those of `hostnames` (of `service`) that have one, by hostname: one
// query for many hosts.
Result<std::map<std::string, CommandRow>> find_current_commands(
    Database& db, const std::string& service, const std::vector<std::string>& hostnames);
// Newest first.
Result<std::vector<Command>> find_commands(Database& db, const CommandFilter& filter);
// The current commands of the hosts heard from since `since`, of `service` when it is given.
Result<std::vector<Command>> find_current_commands_of_hosts_since(
    Database& db, TimePoint since, const std::optional<std::string>& service);

// Inserts a new command (not replaced) and the requests it carries out; a start's arguments go
// through `args`. command.combined_config is not stored: it is built from the spec when read.
Result<void> insert_command(Database& db, const CommandRow& row, ArgsWriter& args);
// Makes `command_id` history. Its successor may be inserted after this, in the same transaction.
Result<void> mark_replaced(Database& db, const std::string& command_id,
                           const std::string& replaced_by, TimePoint at);
// pending -> sent, with one execution row per request.
Result<void> mark_delivered(Database& db, const Command& command, TimePoint at);
// sent -> completed | failed, with its execution rows.
Result<void> mark_reported(Database& db, const CompletionReport& report, TimePoint at);
// A start command reported completed, then failed: the session it began ended in failure (the
// agent died during it). The command becomes failed, with the report's error.
Result<void> mark_session_failed(Database& db, const CompletionReport& report, TimePoint at);

// Deletes up to `batch` commands replaced before `cutoff`, oldest first, with their deliveries
// and links to requests. Current commands stay, however old. Returns how many it deleted.
Result<int64_t> delete_history_before(Database& db, TimePoint cutoff, int64_t batch);

}  // namespace dormant::server::storage
