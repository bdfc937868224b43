// The schema, as an ordered list of migrations. The database's version is PRAGMA user_version:
// the number of the last migration applied.
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
};

// Every migration this binary knows, oldest first.
std::span<const Migration> schema_migrations();

// Applies the migrations newer than the database's version, each in its own transaction together
// with the new version number. Refuses a database whose version is newer than the last migration
// (written by a newer binary). Returns the version the database is at now.
Result<int> migrate(Database& db, std::span<const Migration> migrations = schema_migrations());

// PRAGMA user_version.
Result<int> schema_version(Database& db);

}  // namespace dormant::server::storage
