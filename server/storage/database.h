// What the store needs of a database, whichever it is: SQLite (sqlite_database.h) or PostgreSQL
// (postgres_database.h). A connection runs SQL text, hands out prepared statements and brackets
// transactions; every failure comes back as an Error that names the statement that failed and
// carries the database's own message.
//
// The SQL the store writes is the dialect both understand: numbered parameters (?1, ?2, ...),
// ON CONFLICT, RETURNING, CAST. The few places where they differ ask dialect().
//
// Errors from either database are sorted into the kinds the store acts on: kConflict (a
// concurrent transaction won: run the operation again), kUnavailable (the database cannot be
// reached, or its disk is full: errno ENOSPC; the API answers 503), kInvalidArgument (a value the
// schema refuses).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace dormant::server::storage {

enum class Dialect { kSqlite, kPostgres };

enum class TransactionKind {
  kRead,   // a consistent snapshot for several reads
  kWrite,  // reads and writes; with lock_host(), no other writer touches that host meanwhile
};

// One database's prepared statement. Parameters are bound by 1-based index, columns read by
// 0-based index. A failed bind is remembered and reported by the next step().
class StatementBackend {
 public:
  virtual ~StatementBackend() = default;

  virtual void bind_int64(int index, int64_t value) = 0;
  virtual void bind_double(int index, double value) = 0;
  virtual void bind_text(int index, std::string_view value) = 0;
  virtual void bind_blob(int index, std::string_view bytes) = 0;
  virtual void bind_null(int index) = 0;

  // True when a row is ready to be read, false when there are no more.
  virtual Result<bool> step() = 0;
  // Ready to run again; bindings are kept until rebound.
  virtual void reset() = 0;

  virtual bool is_null(int column) const = 0;
  virtual int64_t int64(int column) const = 0;
  virtual double float64(int column) const = 0;
  // Valid until the next step() or reset().
  virtual std::string_view text(int column) const = 0;
  virtual std::string blob(int column) const = 0;
};

class Statement {
 public:
  explicit Statement(std::unique_ptr<StatementBackend> backend) : backend_(std::move(backend)) {}

  Statement& bind(int index, int64_t value) {
    backend_->bind_int64(index, value);
    return *this;
  }
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value) {
    backend_->bind_double(index, value);
    return *this;
  }
  Statement& bind(int index, std::string_view value) {
    backend_->bind_text(index, value);
    return *this;
  }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, std::nullopt_t) {
    backend_->bind_null(index);
    return *this;
  }
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
  // Binds the values to parameters first, first + 1, ... (one row of a multi-row INSERT).
  template <typename... Values>
  Statement& bind_from(int first, const Values&... values) {
    int index = first - 1;
    (bind(++index, values), ...);
    return *this;
  }
  // Bytes that are not text (compressed profiles).
  Statement& bind_blob(int index, std::string_view bytes) {
    backend_->bind_blob(index, bytes);
    return *this;
  }

  Result<bool> step() { return backend_->step(); }
  // Runs a statement that returns no rows, then resets it so that it can be bound and run again.
  Result<void> run();
  void reset() { backend_->reset(); }

  bool is_null(int column) const { return backend_->is_null(column); }
  int64_t int64(int column) const { return backend_->int64(column); }
  bool boolean(int column) const { return int64(column) != 0; }
  double float64(int column) const { return backend_->float64(column); }
  std::string text(int column) const { return std::string(backend_->text(column)); }
  // The column's bytes where the row holds them: valid until the next step() or reset().
  std::string_view text_view(int column) const { return backend_->text(column); }
  std::string blob(int column) const { return backend_->blob(column); }
  std::optional<std::string> optional_text(int column) const;
  std::optional<int64_t> optional_int64(int column) const;
  std::optional<double> optional_float64(int column) const;

 private:
  std::unique_ptr<StatementBackend> backend_;
};

// One connection. Not safe for concurrent use: the store leases each to one operation at a time.
class Database {
 public:
  virtual ~Database() = default;

  virtual Dialect dialect() const = 0;
  // Where the data is, for messages: a file's path, or the database's name and server.
  virtual const std::string& location() const = 0;

  // Runs one or more statements that return no rows (schema, settings).
  virtual Result<void> execute(std::string_view sql) = 0;
  // A statement for `sql`, prepared once per connection and reused. Statements must not outlive
  // their Database.
  virtual Result<Statement> prepare(std::string_view sql) = 0;
  // Rows changed by the last INSERT, UPDATE or DELETE.
  virtual int64_t changes() const = 0;

  virtual Result<void> begin(TransactionKind kind) = 0;
  virtual Result<void> commit() = 0;
  virtual void rollback() noexcept = 0;
  virtual bool in_transaction() const = 0;

  // The connection was lost: it will never work again and is to be replaced.
  virtual bool broken() const { return false; }
};

// Begins a transaction; rolls it back when destroyed without a successful commit().
class Transaction {
 public:
  using Kind = TransactionKind;

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

// Runs `operation` (no arguments, returning a Result) in a kWrite transaction of its own, committed
// when it succeeds and rolled back when it fails.
template <typename Operation>
auto in_write_transaction(Database& db, Operation operation) -> decltype(operation()) {
  auto transaction = Transaction::begin(db, TransactionKind::kWrite);
  if (!transaction) return std::move(transaction).take_error();
  auto done = operation();
  if (!done) return done;
  if (auto committed = transaction->commit(); !committed) return std::move(committed).take_error();
  return done;
}

// Within a kWrite transaction, makes every other writer that asks for the same host wait until
// this transaction ends: two replicas answering one host's heartbeats at once deliver its command
// once. SQLite's write transactions already exclude each other; PostgreSQL takes an advisory lock.
// Ask for several hosts in one order (sorted) so that two transactions cannot deadlock.
Result<void> lock_host(Database& db, const std::string& hostname, const std::string& service);

// The value to bind to LIMIT for a filter's limit, where a negative one means none: SQLite takes
// -1 for that, PostgreSQL refuses it.
inline int64_t sql_limit(int64_t limit) { return limit < 0 ? INT64_MAX : limit; }

// "?first, ?first+1, …": `count` numbered parameters, for an IN list.
inline std::string numbered_parameters(size_t first, size_t count) {
  std::string list;
  for (size_t i = 0; i < count; ++i) list += (i ? ", ?" : "?") + std::to_string(first + i);
  return list;
}

// "VALUES (…), (…), …": `rows` rows of `columns`, where each column's '?' becomes the next
// numbered parameter (?1, ?2, …): {"?", "CAST(? AS BIGINT)"}.
std::string values_rows(size_t rows, const std::vector<std::string_view>& columns);

// The statement as it reads in an error message: one line, cut short.
std::string abbreviate_sql(std::string_view sql);

}  // namespace dormant::server::storage
