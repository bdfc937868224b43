#include "server/storage/migrations.h"

#include <string>
#include <utility>

namespace dormant::server::storage {
namespace {

// pg_advisory_lock's key for migrations: "dormant" in ASCII (0x646f726d616e74).
constexpr std::string_view kMigrationLockKey = "28270034923122292";

// On PostgreSQL, holds the migration lock from take() to destruction (or to the end of the
// session, if the connection is lost first). On SQLite, each migration's BEGIN IMMEDIATE is lock
// enough.
class MigrationLock {
 public:
  static Result<MigrationLock> take(Database& db) {
    if (db.dialect() != Dialect::kPostgres) return MigrationLock(nullptr);
    // Another server may be migrating, and the schema's changes wait for every reader: as long
    // as they take.
    auto unbounded = db.execute("SET lock_timeout = 0");
    if (!unbounded) return std::move(unbounded).take_error();
    auto locked = db.execute("SELECT pg_advisory_lock(" + std::string(kMigrationLockKey) + ")");
    if (!locked) return std::move(locked).take_error().with_context("taking the migration lock");
    auto table = db.execute("CREATE TABLE IF NOT EXISTS dormant_schema (version INTEGER NOT NULL)");
    if (!table) return std::move(table).take_error();
    return MigrationLock(&db);
  }
  MigrationLock(MigrationLock&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  MigrationLock& operator=(MigrationLock&&) = delete;
  ~MigrationLock() {
    if (db_ != nullptr && !db_->broken()) {
      (void)db_->execute("SELECT pg_advisory_unlock(" + std::string(kMigrationLockKey) + ")");
      (void)db_->execute("RESET lock_timeout");
    }
  }

 private:
  explicit MigrationLock(Database* db) : db_(db) {}
  Database* db_;
};

Result<void> set_schema_version(Database& db, int version) {
  if (db.dialect() == Dialect::kSqlite) {
    return db.execute("PRAGMA user_version = " + std::to_string(version));
  }
  return db.execute("DELETE FROM dormant_schema; INSERT INTO dormant_schema VALUES (" +
                    std::to_string(version) + ")");
}

Result<void> apply(Database& db, const Migration& migration) {
  auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
  if (!transaction) return std::move(transaction).take_error();
  // Another process may have applied it while this one waited for the write lock.
  auto version = schema_version(db);
  if (!version) return std::move(version).take_error();
  if (*version >= migration.version) return ok();
  if (auto applied = db.execute(migration.sql); !applied) return applied;
  if (migration.then != nullptr) {
    if (auto done = migration.then(db); !done) return done;
  }
  if (auto set = set_schema_version(db, migration.version); !set) return set;
  return transaction->commit();
}

}  // namespace

std::span<const Migration> schema_migrations(Dialect dialect) {
  return dialect == Dialect::kPostgres ? postgres_migrations() : sqlite_migrations();
}

Result<int> schema_version(Database& db) {
  auto statement = db.prepare(db.dialect() == Dialect::kSqlite
                                  ? "PRAGMA user_version"
                                  : "SELECT COALESCE(MAX(version), 0) FROM dormant_schema");
  if (!statement) return std::move(statement).take_error();
  auto row = statement->step();
  if (!row) return std::move(row).take_error();
  return *row ? static_cast<int>(statement->int64(0)) : 0;
}

Result<int> migrate(Database& db) { return migrate(db, schema_migrations(db.dialect())); }

Result<int> migrate(Database& db, std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i + 1)) {
      return Error::invalid_argument("migration " + std::to_string(i + 1) + " is numbered " +
                                     std::to_string(migrations[i].version));
    }
  }
  auto lock = MigrationLock::take(db);
  if (!lock) return std::move(lock).take_error().with_context(db.location());
  const int known = static_cast<int>(migrations.size());
  auto version = schema_version(db);
  if (!version) return std::move(version).take_error().with_context("reading the schema version");
  if (*version > known) {
    return Error(ErrorKind::kUnavailable,
                 "database " + db.location() + " has schema version " + std::to_string(*version) +
                     ", newer than the last one this binary knows (" + std::to_string(known) +
                     "): it was written by a newer dormant-server; run that one, or use another "
                     "database");
  }
  for (const Migration& migration : migrations.subspan(static_cast<size_t>(*version))) {
    if (auto applied = apply(db, migration); !applied) {
      return std::move(applied).take_error().with_context(
          "applying migration " + std::to_string(migration.version) + " (" +
          std::string(migration.description) + ") to " + db.location());
    }
  }
  return known;
}

}  // namespace dormant::server::storage
