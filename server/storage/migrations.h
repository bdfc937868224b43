// The schema, as an ordered list of migrations for each database. Both lists have the same
// versions and describe the same tables. The database's version is the number of the last
// migration applied: PRAGMA user_version on SQLite, the dormant_schema table on PostgreSQL.
#pragma once

#include <span>
#include <string_view>

#include "common/result.h"
#include "server/storage/database.h"

namespace dormant::server::storage {

struct Migration {
  int version;  // 1, 2, 3, ... in order
  std::string_view description;
  std::string_view sql;
  // Work SQL alone cannot do (moving data that needs hashing), run after `sql` in the same
  // transaction.
  Result<void> (*then)(Database& db) = nullptr;
};

// Migration 2, the same SQL on both: retention deletes the oldest rows in batches, found by the
// time they were replaced or received.
inline constexpr std::string_view kRetentionIndexes = R"sql(
CREATE INDEX commands_by_replaced ON commands (replaced_ms) WHERE replaced_by IS NOT NULL;
CREATE INDEX profiling_requests_by_time ON profiling_requests (created_ms);
CREATE INDEX profiles_by_received ON profiles (received_ms);
)sql";

// Migration 5, the same SQL on both: a command inserted while the one it replaces names it
// (replaced_by, a deferred foreign key) is checked against the rows that name it, and so is a
// command deleted by retention: by this index, not by a scan of every command (each start merged
// into a standing one scanned them all, so repeated starts cost quadratic time).
inline constexpr std::string_view kReplacementIndex = R"sql(
CREATE INDEX commands_by_replacement ON commands (replaced_by);
)sql";

// Migration 4, the same SQL on both: each host's latest inventory (the heartbeat's containers[])
// as rows, rewritten only when it changes (inventory_digest); and subscriptions, the continuous
// starts by selector that enroll hosts as their heartbeats come, with the hosts opted out of each.
inline constexpr std::string_view kWorkloadTables = R"sql(
ALTER TABLE hosts ADD COLUMN inventory_digest TEXT;
ALTER TABLE hosts ADD COLUMN inventory_containers BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN inventory_processes BIGINT NOT NULL DEFAULT 0;
CREATE TABLE host_containers (
  hostname       TEXT NOT NULL,
  service_name   TEXT NOT NULL,
  position       BIGINT NOT NULL,  -- in the heartbeat's list
  container_id   TEXT,
  container_name TEXT NOT NULL,
  runtime        TEXT,
  namespace      TEXT,
  pod_name       TEXT,
  workload_name  TEXT,
  workload_kind  TEXT,
  process_count  BIGINT NOT NULL,
  PRIMARY KEY (hostname, service_name, position),
  FOREIGN KEY (hostname, service_name) REFERENCES hosts (hostname, service_name)
    ON DELETE CASCADE
);
CREATE INDEX host_containers_by_namespace ON host_containers (service_name, namespace);
CREATE INDEX host_containers_by_pod ON host_containers (service_name, pod_name);
CREATE INDEX host_containers_by_workload ON host_containers (service_name, workload_name);
CREATE INDEX host_containers_by_name ON host_containers (service_name, container_name);
CREATE TABLE host_processes (
  hostname     TEXT NOT NULL,
  service_name TEXT NOT NULL,
  position     BIGINT NOT NULL,
  pid          BIGINT NOT NULL,
  process_name TEXT NOT NULL,
  PRIMARY KEY (hostname, service_name, pid),
  FOREIGN KEY (hostname, service_name, position)
    REFERENCES host_containers (hostname, service_name, position) ON DELETE CASCADE
);
CREATE INDEX host_processes_by_container ON host_processes (hostname, service_name, position);
CREATE INDEX host_processes_by_name ON host_processes (service_name, process_name);
CREATE TABLE subscriptions (
  subscription_id TEXT PRIMARY KEY,
  request_id      TEXT NOT NULL,  -- the continuous start: what its commands run
  service_name    TEXT NOT NULL,
  target_scope    TEXT NOT NULL,
  target_entities TEXT NOT NULL,  -- the selectors, a JSON list
  created_ms      BIGINT NOT NULL,
  ended_ms        BIGINT,
  ended_by        TEXT            -- the stop request that ended it, or "api"
);
CREATE INDEX subscriptions_by_service ON subscriptions (service_name, ended_ms);
CREATE TABLE subscription_opt_outs (
  subscription_id TEXT NOT NULL REFERENCES subscriptions (subscription_id) ON DELETE CASCADE,
  hostname        TEXT NOT NULL,
  created_ms      BIGINT NOT NULL,
  PRIMARY KEY (subscription_id, hostname)
);
)sql";

// Migration 6, the same SQL on both (SQLite keeps a BYTEA column's blobs as they are): profile
// rollups (rollup_records.h) and each upload's CPU and memory figures and instance type.
// Profiles stored before it are rolled up afterwards, found by rolled_up = 0.
inline constexpr std::string_view kRollupTables = R"sql(
ALTER TABLE profiles ADD COLUMN cpu_avg DOUBLE PRECISION;
ALTER TABLE profiles ADD COLUMN mem_avg DOUBLE PRECISION;
ALTER TABLE profiles ADD COLUMN instance_type TEXT NOT NULL DEFAULT '';
ALTER TABLE profiles ADD COLUMN rolled_up BIGINT NOT NULL DEFAULT 0;
CREATE INDEX profiles_to_roll_up ON profiles (gpid) WHERE rolled_up = 0;
CREATE TABLE rollup_stacks (
  service_name TEXT NOT NULL,
  stack_id     BIGINT NOT NULL,  -- the SHA-256 of stack, its first 8 bytes
  stack        TEXT NOT NULL,    -- "comm;frame;...;frame", root first
  last_day_ms  BIGINT NOT NULL,  -- the newest day bucket that holds it
  PRIMARY KEY (service_name, stack_id)
);
CREATE INDEX rollup_stacks_by_day ON rollup_stacks (last_day_ms);
CREATE TABLE service_rollups (
  service_name   TEXT NOT NULL,
  resolution_s   BIGINT NOT NULL,
  bucket_ms      BIGINT NOT NULL,
  profiles       BIGINT NOT NULL,
  samples        BIGINT NOT NULL,
  first_start_ms BIGINT NOT NULL,
  last_end_ms    BIGINT NOT NULL,
  frequency_hz   BIGINT NOT NULL,  -- every profile's, or 0
  stacks         BYTEA NOT NULL,   -- rollup_blob.h
  PRIMARY KEY (service_name, resolution_s, bucket_ms)
);
CREATE INDEX service_rollups_by_age ON service_rollups (resolution_s, bucket_ms);
CREATE TABLE label_rollups (
  service_name   TEXT NOT NULL,
  resolution_s   BIGINT NOT NULL,
  bucket_ms      BIGINT NOT NULL,
  hostname       TEXT NOT NULL,
  container      TEXT NOT NULL,
  instance_type  TEXT NOT NULL,
  profiles       BIGINT NOT NULL,
  samples        BIGINT NOT NULL,
  first_start_ms BIGINT NOT NULL,
  last_end_ms    BIGINT NOT NULL,
  frequency_hz   BIGINT NOT NULL,
  stacks         BYTEA NOT NULL,
  PRIMARY KEY (service_name, resolution_s, bucket_ms, hostname, container, instance_type)
);
CREATE INDEX label_rollups_by_age ON label_rollups (resolution_s, bucket_ms);
)sql";

// Migration 8, the same SQL on both: how far each service's hour and day rollups are compacted
// (rollup_records.h: Compacted); mark_rollups_compacted() then marks what uploads wrote whole.
inline constexpr std::string_view kRollupCompactions = R"sql(
CREATE TABLE rollup_compactions (
  service_name TEXT NOT NULL,
  resolution_s BIGINT NOT NULL,
  before_ms    BIGINT NOT NULL,  -- this size's buckets that start before it are whole
  PRIMARY KEY (service_name, resolution_s)
);
)sql";

// Migration 9, the same SQL on both: what each upload holds, for the profiles list. NULL in the
// profiles stored before (cpu_seconds too where the samples are not CPU clock ticks).
inline constexpr std::string_view kProfileSamples = R"sql(
ALTER TABLE profiles ADD COLUMN samples BIGINT;
ALTER TABLE profiles ADD COLUMN idle_samples BIGINT;
ALTER TABLE profiles ADD COLUMN cpu_seconds DOUBLE PRECISION;
)sql";

// Every migration this binary knows for each database, oldest first.
std::span<const Migration> sqlite_migrations();
std::span<const Migration> postgres_migrations();
std::span<const Migration> schema_migrations(Dialect dialect);

// Applies the migrations newer than the database's version, each in its own transaction together
// with the new version number. Refuses a database whose version is newer than the last migration
// (written by a newer binary). Returns the version the database is at now.
//
// Several servers starting at once on one PostgreSQL database migrate it once: each takes an
// advisory lock for the whole of it, and the later ones find the work done.
Result<int> migrate(Database& db, std::span<const Migration> migrations);
Result<int> migrate(Database& db);

Result<int> schema_version(Database& db);

}  // namespace dormant::server::storage
