// A thin RAII layer over the SQLite C API: one owner for the connection, one for each prepared
// statement, and a transaction guard. Every SQLite failure comes back as an Error that names the
// statement that failed and carries SQLite's own message.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dormant::server::storage {

class Statement;

// One connection to one database file. Not safe for concurrent use: callers serialise access.
class Database {
 public:
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens (creating if needed) the database at `path` in WAL mode with foreign keys enforced.
  static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements that return no rows (schema, pragmas).
  Result<void> execute(std::string_view sql);
  // A statement for `sql`. Prepared once per connection: a statement handed back (destroyed) is
  // kept, reset, and handed out again the next time the same text is prepared. Statements must
  // not outlive their Database.
  Result<Statement> prepare(std::string_view sql);

  int64_t last_insert_rowid() const;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const;
  bool in_transaction() const;
  const std::filesystem::path& path() const { return path_; }

  // "<doing>: <SQLite's message for the last failure on this connection>".
  Error last_error(std::string_view doing, int code) const;

 private:
  friend class Statement;
  Database(sqlite3* handle, std::filesystem::path path) : handle_(handle), path_(std::move(path)) {}
  // Takes back a statement that is done with: kept for the next prepare() of the same text.
  void release(std::string sql, sqlite3_stmt* handle) noexcept;

  sqlite3* handle_;
  std::filesystem::path path_;
  std::unordered_map<std::string, sqlite3_stmt*> idle_statements_;
};

// A prepared statement. Parameters are bound by 1-based index, columns read by 0-based index.
// A failed bind is remembered and reported by the next step() or run().
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, std::nullopt_t);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, std::nullopt);
  }
  // Binds the values to parameters 1, 2, 3, ...
  template <typename... Values>
  Statement& bind_all(const Values&... values) {
    int index = 0;
    (bind(++index, values), ...);
    return *this;
  }

  // Advances to the next row: true when a row is ready to be read, false when there are no more.
  Result<bool> step();
  // Runs a statement that returns no rows, then resets it so that it can be bound and run again.
  Result<void> run();
  // Makes the statement ready to run again; bindings are kept until rebound.
  void reset();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  bool boolean(int column) const { return int64(column) != 0; }
  std::string text(int column) const;
  std::optional<std::string> optional_text(int column) const;
  std::optional<int64_t> optional_int64(int column) const;

 private:
  friend class Database;
  Statement(Database* db, sqlite3_stmt* handle, std::string sql)
      : db_(db), handle_(handle), sql_(std::move(sql)) {}
  void release();
  Statement& check_bind(int code, int index);
  Error error(int code) const;

  Database* db_;
  sqlite3_stmt* handle_;
  std::string sql_;  // for error messages
  std::optional<Error> bind_error_;
};

// BEGIN ... COMMIT; rolls back when destroyed without a successful commit().
class Transaction {
 public:
  enum class Kind {
    kRead,   // BEGIN DEFERRED: a consistent snapshot for several reads
    kWrite,  // BEGIN IMMEDIATE: takes the write lock now, so the commit cannot meet SQLITE_BUSY
  };

  static Result<Transaction> begin(Database& db, Kind kind);

  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Result<void> commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}

  Database* db_;  // null once committed or rolled back
};

}  // namespace dormant::server::storage
