// The store's database on PostgreSQL, through libpq: one connection per object. Write
// transactions are READ COMMITTED: the store serialises what must be (one host's command) with
// lock_host(), a transaction-scoped advisory lock, rather than let SERIALIZABLE abort and retry
// transactions that merely shared a page. Deadlocks come back as kConflict.
//
// Every wait has an end: connecting (connect_timeout), each statement (statement_timeout) and a
// server that vanished from the network (TCP keepalives and tcp_user_timeout). A lost connection
// makes broken() true; the store replaces it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "server/storage/database.h"

struct pg_conn;
struct pg_result;

namespace dormant::server::storage {

class PostgresDatabase final : public Database {
 public:
  static constexpr int kConnectTimeoutS = 5;
  static constexpr int kStatementTimeoutMs = 30'000;
  // A lock another session holds (a table locked by hand, a long transaction) is waited for
  // this long; past it the statement fails (kTimeout: 503) and its server thread goes on. The
  // migrations, which may wait for another server's, wait without it.
  static constexpr int kLockTimeoutMs = 3'000;

  // `url`: "postgresql://user@host:port/dbname?..." or libpq's "key=value" form. Its own settings
  // win over the timeouts above.
  static Result<std::unique_ptr<PostgresDatabase>> connect(const std::string& url);

  PostgresDatabase(const PostgresDatabase&) = delete;
  PostgresDatabase& operator=(const PostgresDatabase&) = delete;
  ~PostgresDatabase() override;

  Dialect dialect() const override { return Dialect::kPostgres; }
  const std::string& location() const override { return location_; }
  Result<void> execute(std::string_view sql) override;
  Result<Statement> prepare(std::string_view sql) override;
  int64_t changes() const override { return changes_; }
  Result<void> begin(TransactionKind kind) override;
  Result<void> commit() override;
  void rollback() noexcept override;
  bool in_transaction() const override;
  bool broken() const override;
  // For LISTEN, which reads the connection's socket itself.
  pg_conn* native_handle() const { return connection_; }

  // Runs a prepared statement; the result is owned by the caller (PQclear). Records changes().
  Result<pg_result*> run_prepared(const std::string& name, std::string_view sql, int count,
                                  const char* const* values, const int* lengths,
                                  const int* formats);
  // "<doing>: <PostgreSQL's message>", sorted by SQLSTATE into an ErrorKind.
  Error error_of(std::string_view doing, const pg_result* result) const;

 private:
  PostgresDatabase(pg_conn* connection, std::string location)
      : connection_(connection), location_(std::move(location)) {}
  Result<void> run_simple(std::string_view sql, std::string_view expected_tag = {});

  pg_conn* connection_;
  std::string location_;
  std::unordered_map<std::string, std::string> prepared_;  // SQL ($n form) -> statement name
  int64_t changes_ = 0;
};

// The store's SQL with PostgreSQL's parameters: ?3 becomes $3, a bare ? the next number. Quoted
// text and identifiers are left as they are.
std::string to_postgres_parameters(std::string_view sql);

// libpq's "postgresql://..." or "key=value" text for messages: the password left out.
std::string describe_postgres_url(const std::string& url);

}  // namespace dormant::server::storage
