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
