// The schema on SQLite: INTEGER is 64-bit, JSON columns are checked with SQLite's JSON functions.
#include <array>

#include "server/storage/args_rows.h"
#include "server/storage/migrations.h"
#include "server/storage/rollups.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kSqliteV1 = R"sql(
CREATE TABLE hosts (
  hostname              TEXT NOT NULL,
  service_name          TEXT NOT NULL,
  ip_address            TEXT NOT NULL,
  agent_version         TEXT,
  run_mode              TEXT,
  status                TEXT NOT NULL CHECK (status IN ('active', 'idle', 'error', 'offline')),
  first_heartbeat_ms    INTEGER NOT NULL,
  last_heartbeat_ms     INTEGER NOT NULL,
  agent_timestamp       TEXT,  -- the agent's own clock, as it wrote it
  last_command_id       TEXT,
  received_command_ids  TEXT NOT NULL CHECK (json_type(received_command_ids) = 'array'),
  executed_command_ids  TEXT NOT NULL CHECK (json_type(executed_command_ids) = 'array'),
  supported_perf_events TEXT NOT NULL CHECK (json_type(supported_perf_events) = 'array'),
  agent_health          TEXT CHECK (agent_health IS NULL OR json_valid(agent_health)),
  extra                 TEXT NOT NULL CHECK (json_type(extra) = 'object'),  -- all other fields
  PRIMARY KEY (hostname, service_name)
);

-- One row per API request. Start parameters are NULL for stops.
CREATE TABLE profiling_requests (
  request_id      TEXT PRIMARY KEY,
  service_name    TEXT NOT NULL,
  request_type    TEXT NOT NULL CHECK (request_type IN ('start', 'stop')),
  target_hosts    TEXT NOT NULL CHECK (json_type(target_hosts) = 'object'),  -- host: [pids] | null
  continuous      INTEGER,
  duration        INTEGER,
  frequency       INTEGER,
  profiling_mode  TEXT CHECK (profiling_mode IN ('cpu', 'allocation', 'none')),
  additional_args TEXT CHECK (additional_args IS NULL OR json_type(additional_args) = 'object'),
  stop_level      TEXT CHECK (stop_level IN ('process', 'host')),
  status          TEXT NOT NULL
                  CHECK (status IN ('pending', 'assigned', 'completed', 'failed', 'cancelled')),
  created_ms      INTEGER NOT NULL
);
CREATE INDEX profiling_requests_by_service ON profiling_requests (service_name, created_ms);

-- Every command ever issued. The current command of a host is the one not replaced; the others
-- are its history. What a command asks is kept in columns (pids ... additional_args) so that
-- later requests can merge with it; combined_config is what the agent receives.
CREATE TABLE commands (
  command_id      TEXT PRIMARY KEY,
  hostname        TEXT NOT NULL,
  service_name    TEXT NOT NULL,
  command_type    TEXT NOT NULL CHECK (command_type IN ('start', 'stop')),
  pids            TEXT CHECK (pids IS NULL OR json_type(pids) = 'array'),  -- NULL: whole host
  stop_level      TEXT CHECK (stop_level IN ('process', 'host')),
  continuous      INTEGER,
  duration        INTEGER,
  frequency       INTEGER,
  profiling_mode  TEXT CHECK (profiling_mode IN ('cpu', 'allocation', 'none')),
  additional_args TEXT CHECK (additional_args IS NULL OR json_type(additional_args) = 'object'),
  combined_config TEXT NOT NULL CHECK (json_type(combined_config) = 'object'),
  status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'completed', 'failed')),
  created_ms      INTEGER NOT NULL,
  sent_ms         INTEGER,
  completed_ms    INTEGER,
  execution_time  INTEGER,
  error_message   TEXT,
  results_path    TEXT,
  -- Deferred: the replaced row is updated before its successor is inserted.
  replaced_by     TEXT REFERENCES commands (command_id) DEFERRABLE INITIALLY DEFERRED,
  replaced_ms     INTEGER
);
CREATE UNIQUE INDEX commands_one_current ON commands (hostname, service_name)
  WHERE replaced_by IS NULL;
CREATE INDEX commands_by_host ON commands (hostname, service_name, created_ms);
CREATE INDEX commands_by_service ON commands (service_name, created_ms);

-- The requests a command carries out (more than one after a merge).
CREATE TABLE command_requests (
  command_id TEXT NOT NULL REFERENCES commands (command_id),
  request_id TEXT NOT NULL REFERENCES profiling_requests (request_id),
  PRIMARY KEY (command_id, request_id)
) WITHOUT ROWID;
CREATE INDEX command_requests_by_request ON command_requests (request_id);

-- Deliveries: one row per request of a command, written when a heartbeat first carries it.
CREATE TABLE executions (
  command_id   TEXT NOT NULL REFERENCES commands (command_id),
  request_id   TEXT NOT NULL REFERENCES profiling_requests (request_id),
  hostname     TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('assigned', 'completed', 'failed')),
  delivered_ms INTEGER NOT NULL,
  reported_ms  INTEGER,
  PRIMARY KEY (command_id, request_id)
) WITHOUT ROWID;

-- Uploaded profiles. The gzip-compressed collapsed text is a file under profiles/ in the data
-- directory, named by file_name. AUTOINCREMENT: a gpid is never given to a second profile.
CREATE TABLE profiles (
  gpid            INTEGER PRIMARY KEY AUTOINCREMENT,
  service_name    TEXT NOT NULL,
  hostname        TEXT NOT NULL,
  start_ms        INTEGER NOT NULL,
  end_ms          INTEGER NOT NULL,
  received_ms     INTEGER NOT NULL,
  raw_size        INTEGER NOT NULL,
  compressed_size INTEGER NOT NULL,
  file_name       TEXT NOT NULL UNIQUE
);
CREATE INDEX profiles_by_service ON profiles (service_name, start_ms);
CREATE INDEX profiles_by_host ON profiles (hostname, start_ms);
CREATE INDEX profiles_by_time ON profiles (start_ms);
)sql";

// Requests and commands refer to their additional_args, stored once (args_rows.h moves them
// there and drops the columns that held them); hosts are expired by their last heartbeat.
constexpr std::string_view kSqliteV3 = R"sql(
CREATE TABLE additional_args (
  digest TEXT PRIMARY KEY,  -- SHA-256 of args, in hex
  args   TEXT NOT NULL CHECK (json_type(args) = 'object')
);
ALTER TABLE commands ADD COLUMN args_digest TEXT REFERENCES additional_args (digest);
ALTER TABLE profiling_requests ADD COLUMN args_digest TEXT REFERENCES additional_args (digest);
CREATE INDEX commands_by_args ON commands (args_digest);
CREATE INDEX profiling_requests_by_args ON profiling_requests (args_digest);
CREATE INDEX hosts_by_last_heartbeat ON hosts (last_heartbeat_ms);
)sql";

// Migration 7: what Performance Studio's web UI keeps (saved filters, snapshots) and the cores
// of each upload and host, for its nodes-and-cores figures.
constexpr std::string_view kSqliteV7 = R"sql(
ALTER TABLE profiles ADD COLUMN processors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN processors BIGINT NOT NULL DEFAULT 0;
CREATE TABLE saved_filters (
  filter_id    INTEGER PRIMARY KEY AUTOINCREMENT,
  service_name TEXT NOT NULL,
  filter       TEXT NOT NULL CHECK (json_type(filter) = 'object'),  -- {"$and"|"$or": [rules]}
  created_ms   BIGINT NOT NULL
);
CREATE INDEX saved_filters_by_service ON saved_filters (service_name, filter_id);
CREATE TABLE snapshots (
  snapshot_id  INTEGER PRIMARY KEY AUTOINCREMENT,
  service_name TEXT NOT NULL,
  start_ms     BIGINT NOT NULL,
  end_ms       BIGINT NOT NULL,
  frames       TEXT NOT NULL CHECK (json_type(frames) = 'array'),
  filter       TEXT CHECK (filter IS NULL OR json_valid(filter)),
  created_ms   BIGINT NOT NULL
);
)sql";

constexpr std::array kMigrations = {
    Migration{1, "hosts, requests, commands, executions, profiles", kSqliteV1},
    Migration{2, "indexes for retention", kRetentionIndexes},
    Migration{3, "additional_args stored once; hosts expired by their last heartbeat", kSqliteV3,
              move_args_to_their_table},
    Migration{4, "host inventories as rows; subscriptions", kWorkloadTables},
    Migration{5, "commands found by their replacement", kReplacementIndex},
    Migration{6, "profile rollups; uploads' CPU, memory and instance type", kRollupTables},
    Migration{7, "saved filters, snapshots; uploads' and hosts' processors", kSqliteV7},
    Migration{8, "hour and day rollups compacted from minutes", kRollupCompactions,
              mark_rollups_compacted},
    Migration{9, "uploads' samples, idle samples and CPU time", kProfileSamples},
};

}  // namespace

std::span<const Migration> sqlite_migrations() { return kMigrations; }

}  // namespace dormant::server::storage
