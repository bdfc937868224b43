// The store's database on SQLite: one file in WAL mode with foreign keys enforced, a thin RAII
// layer over the C API.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

#include "server/storage/database.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dormant::server::storage {

class SqliteDatabase final : public Database {
 public:
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens (creating if needed) the database at `path` in WAL mode with foreign keys enforced.
  static Result<std::unique_ptr<SqliteDatabase>> open(const std::filesystem::path& path);

  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;
  ~SqliteDatabase() override;

  Dialect dialect() const override { return Dialect::kSqlite; }
  const std::string& location() const override { return location_; }
  Result<void> execute(std::string_view sql) override;
  // A statement handed back (destroyed) is kept, reset, and handed out again the next time the
  // same text is prepared.
  Result<Statement> prepare(std::string_view sql) override;
  int64_t changes() const override;
  Result<void> begin(TransactionKind kind) override;
  Result<void> commit() override;
  void rollback() noexcept override;
  bool in_transaction() const override;

  // "<doing>: <SQLite's message for the last failure on this connection>".
  Error last_error(std::string_view doing, int code) const;
  // Takes back a statement that is done with: kept for the next prepare() of the same text.
  void release(std::string sql, sqlite3_stmt* handle) noexcept;

 private:
  SqliteDatabase(sqlite3* handle, std::string location)
      : handle_(handle), location_(std::move(location)) {}
  Result<void> run_cached(std::string_view sql);

  sqlite3* handle_;
  std::string location_;
  std::unordered_map<std::string, sqlite3_stmt*> idle_statements_;
};

}  // namespace dormant::server::storage
