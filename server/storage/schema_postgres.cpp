// The schema on PostgreSQL: the same tables and columns as on SQLite (schema_sqlite.cpp), so that
// the store's SQL reads both. What differs: BIGINT columns, JSON checked by casting, identity
// columns for the ids SQLite derives from its rowid, and profile bodies in a table of their own,
// where every replica reads them.
#include <array>

#include "server/storage/args_rows.h"
#include "server/storage/migrations.h"
#include "server/storage/rollups.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kPostgresV1 = R"sql(
CREATE TABLE hosts (
  hostname              TEXT NOT NULL,
  service_name          TEXT NOT NULL,
  ip_address            TEXT NOT NULL,
  agent_version         TEXT,
  run_mode              TEXT,
  status                TEXT NOT NULL CHECK (status IN ('active', 'idle', 'error', 'offline')),
  first_heartbeat_ms    BIGINT NOT NULL,
  last_heartbeat_ms     BIGINT NOT NULL,
  agent_timestamp       TEXT,
  last_command_id       TEXT,
  received_command_ids  TEXT NOT NULL CHECK (json_typeof(received_command_ids::json) = 'array'),
  executed_command_ids  TEXT NOT NULL CHECK (json_typeof(executed_command_ids::json) = 'array'),
  supported_perf_events TEXT NOT NULL CHECK (json_typeof(supported_perf_events::json) = 'array'),
  agent_health          TEXT CHECK (agent_health IS NULL OR agent_health::json IS NOT NULL),
  extra                 TEXT NOT NULL CHECK (json_typeof(extra::json) = 'object'),
  PRIMARY KEY (hostname, service_name)
);

CREATE TABLE profiling_requests (
  request_id      TEXT PRIMARY KEY,
  service_name    TEXT NOT NULL,
  request_type    TEXT NOT NULL CHECK (request_type IN ('start', 'stop')),
  target_hosts    TEXT NOT NULL CHECK (json_typeof(target_hosts::json) = 'object'),
  continuous      BIGINT,
  duration        BIGINT,
  frequency       BIGINT,
  profiling_mode  TEXT CHECK (profiling_mode IN ('cpu', 'allocation', 'none')),
  additional_args TEXT CHECK (additional_args IS NULL OR
                              json_typeof(additional_args::json) = 'object'),
  stop_level      TEXT CHECK (stop_level IN ('process', 'host')),
  status          TEXT NOT NULL
                  CHECK (status IN ('pending', 'assigned', 'completed', 'failed', 'cancelled')),
  created_ms      BIGINT NOT NULL
);
CREATE INDEX profiling_requests_by_service ON profiling_requests (service_name, created_ms);

-- rowid: the order of insertion, which SQLite keeps by itself; the store sorts by it.
CREATE TABLE commands (
  command_id      TEXT PRIMARY KEY,
  rowid           BIGINT GENERATED ALWAYS AS IDENTITY,
  hostname        TEXT NOT NULL,
  service_name    TEXT NOT NULL,
  command_type    TEXT NOT NULL CHECK (command_type IN ('start', 'stop')),
  pids            TEXT CHECK (pids IS NULL OR json_typeof(pids::json) = 'array'),
  stop_level      TEXT CHECK (stop_level IN ('process', 'host')),
  continuous      BIGINT,
  duration        BIGINT,
  frequency       BIGINT,
  profiling_mode  TEXT CHECK (profiling_mode IN ('cpu', 'allocation', 'none')),
  additional_args TEXT CHECK (additional_args IS NULL OR
                              json_typeof(additional_args::json) = 'object'),
  combined_config TEXT NOT NULL CHECK (json_typeof(combined_config::json) = 'object'),
  status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'completed', 'failed')),
  created_ms      BIGINT NOT NULL,
  sent_ms         BIGINT,
  completed_ms    BIGINT,
  execution_time  BIGINT,
  error_message   TEXT,
  results_path    TEXT,
  replaced_by     TEXT REFERENCES commands (command_id) DEFERRABLE INITIALLY DEFERRED,
  replaced_ms     BIGINT
);
CREATE UNIQUE INDEX commands_one_current ON commands (hostname, service_name)
  WHERE replaced_by IS NULL;
CREATE INDEX commands_by_host ON commands (hostname, service_name, created_ms);
CREATE INDEX commands_by_service ON commands (service_name, created_ms);

CREATE TABLE command_requests (
  command_id TEXT NOT NULL REFERENCES commands (command_id),
  request_id TEXT NOT NULL REFERENCES profiling_requests (request_id),
  PRIMARY KEY (command_id, request_id)
);
CREATE INDEX command_requests_by_request ON command_requests (request_id);

CREATE TABLE executions (
  command_id   TEXT NOT NULL REFERENCES commands (command_id),
  request_id   TEXT NOT NULL REFERENCES profiling_requests (request_id),
  hostname     TEXT NOT NULL,
  status       TEXT NOT NULL CHECK (status IN ('assigned', 'completed', 'failed')),
  delivered_ms BIGINT NOT NULL,
  reported_ms  BIGINT,
  PRIMARY KEY (command_id, request_id)
);

-- file_name stays NULL: the body is in profile_bodies.
CREATE TABLE profiles (
  gpid            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  service_name    TEXT NOT NULL,
  hostname        TEXT NOT NULL,
  start_ms        BIGINT NOT NULL,
  end_ms          BIGINT NOT NULL,
  received_ms     BIGINT NOT NULL,
  raw_size        BIGINT NOT NULL,
  compressed_size BIGINT NOT NULL,
  file_name       TEXT UNIQUE
);
CREATE INDEX profiles_by_service ON profiles (service_name, start_ms);
CREATE INDEX profiles_by_host ON profiles (hostname, start_ms);
CREATE INDEX profiles_by_time ON profiles (start_ms);

-- The gzip-compressed collapsed text. Already compressed: stored out of line as it is.
CREATE TABLE profile_bodies (
  gpid BIGINT PRIMARY KEY REFERENCES profiles (gpid) ON DELETE CASCADE,
  gzip BYTEA NOT NULL
);
ALTER TABLE profile_bodies ALTER COLUMN gzip SET STORAGE EXTERNAL;
)sql";

// Requests and commands refer to their additional_args, stored once (args_rows.h moves them
// there and drops the columns that held them); hosts are expired by their last heartbeat.
constexpr std::string_view kPostgresV3 = R"sql(
CREATE TABLE additional_args (
  digest TEXT PRIMARY KEY,
  args   TEXT NOT NULL CHECK (json_typeof(args::json) = 'object')
);
ALTER TABLE commands ADD COLUMN args_digest TEXT REFERENCES additional_args (digest);
ALTER TABLE profiling_requests ADD COLUMN args_digest TEXT REFERENCES additional_args (digest);
CREATE INDEX commands_by_args ON commands (args_digest);
CREATE INDEX profiling_requests_by_args ON profiling_requests (args_digest);
CREATE INDEX hosts_by_last_heartbeat ON hosts (last_heartbeat_ms);
)sql";

// Migration 7: what Performance Studio's web UI keeps (saved filters, snapshots) and the cores
// of each upload and host, for its nodes-and-cores figures.
constexpr std::string_view kPostgresV7 = R"sql(
ALTER TABLE profiles ADD COLUMN processors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN processors BIGINT NOT NULL DEFAULT 0;
CREATE TABLE saved_filters (
  filter_id    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  service_name TEXT NOT NULL,
  filter       TEXT NOT NULL CHECK (json_typeof(filter::json) = 'object'),
  created_ms   BIGINT NOT NULL
);
CREATE INDEX saved_filters_by_service ON saved_filters (service_name, filter_id);
CREATE TABLE snapshots (
  snapshot_id  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  service_name TEXT NOT NULL,
  start_ms     BIGINT NOT NULL,
  end_ms       BIGINT NOT NULL,
  frames       TEXT NOT NULL CHECK (json_typeof(frames::json) = 'array'),
  filter       TEXT CHECK (filter IS NULL OR json_typeof(filter::json) IS NOT NULL),
  created_ms   BIGINT NOT NULL
);
)sql";

constexpr std::array kMigrations = {
    Migration{1, "hosts, requests, commands, executions, profiles", kPostgresV1},
    Migration{2, "indexes for retention", kRetentionIndexes},
    Migration{3, "additional_args stored once; hosts expired by their last heartbeat", kPostgresV3,
              move_args_to_their_table},
    Migration{4, "host inventories as rows; subscriptions", kWorkloadTables},
    Migration{5, "commands found by their replacement", kReplacementIndex},
    Migration{6, "profile rollups; uploads' CPU, memory and instance type", kRollupTables},
    Migration{7, "saved filters, snapshots; uploads' and hosts' processors", kPostgresV7},
    Migration{8, "hour and day rollups compacted from minutes", kRollupCompactions,
              mark_rollups_compacted},
    Migration{9, "uploads' samples, idle samples and CPU time", kProfileSamples},
};

}  // namespace

std::span<const Migration> postgres_migrations() { return kMigrations; }

}  // namespace dormant::server::storage
