#include "server/storage/sqlite_database.h"

#include <cerrno>
#include <utility>

#include <sqlite3.h>

namespace dormant::server::storage {
namespace {

ErrorKind kind_of(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorKind::kTimeout;  // still locked when busy_timeout ran out
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      return ErrorKind::kInvalidArgument;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorKind::kParse;
    default:
      return ErrorKind::kSystem;
  }
}

class SqliteStatement final : public StatementBackend {
 public:
  SqliteStatement(SqliteDatabase* db, sqlite3_stmt* handle, std::string sql)
      : db_(db), handle_(handle), sql_(std::move(sql)) {}
  ~SqliteStatement() override { db_->release(std::move(sql_), handle_); }

  void bind_int64(int index, int64_t value) override {
    check_bind(sqlite3_bind_int64(handle_, index, value), index);
  }
  void bind_double(int index, double value) override {
    check_bind(sqlite3_bind_double(handle_, index, value), index);
  }
  void bind_text(int index, std::string_view value) override {
    check_bind(sqlite3_bind_text64(handle_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8),
               index);
  }
  void bind_blob(int index, std::string_view bytes) override {
    check_bind(sqlite3_bind_blob64(handle_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT),
               index);
  }
  void bind_null(int index) override { check_bind(sqlite3_bind_null(handle_, index), index); }

  Result<bool> step() override {
    if (bind_error_) return *bind_error_;
    int code = sqlite3_step(handle_);
    if (code == SQLITE_ROW) return true;
    if (code == SQLITE_DONE) return false;
    return db_->last_error("running \"" + abbreviate_sql(sql_) + "\"", code);
  }
  void reset() override {
    sqlite3_reset(handle_);
    bind_error_.reset();
  }

  bool is_null(int column) const override {
    return sqlite3_column_type(handle_, column) == SQLITE_NULL;
  }
  int64_t int64(int column) const override { return sqlite3_column_int64(handle_, column); }
  double float64(int column) const override { return sqlite3_column_double(handle_, column); }
  std::string_view text(int column) const override {
    const auto* data = sqlite3_column_text(handle_, column);
    if (data == nullptr) return {};
    return std::string_view(reinterpret_cast<const char*>(data), bytes(column));
  }
  std::string blob(int column) const override {
    const auto* data = sqlite3_column_blob(handle_, column);
    if (data == nullptr) return {};
    return std::string(static_cast<const char*>(data), bytes(column));
  }

 private:
  size_t bytes(int column) const {
    return static_cast<size_t>(sqlite3_column_bytes(handle_, column));
  }
  void check_bind(int code, int index) {
    if (code != SQLITE_OK && !bind_error_) {
      bind_error_ = db_->last_error(
          "binding parameter " + std::to_string(index) + " of \"" + abbreviate_sql(sql_) + "\"",
          code);
    }
  }

  SqliteDatabase* db_;
  sqlite3_stmt* handle_;
  std::string sql_;  // for error messages, and the cache's key
  std::optional<Error> bind_error_;
};

}  // namespace

Result<std::unique_ptr<SqliteDatabase>> SqliteDatabase::open(const std::filesystem::path& path) {
  sqlite3* handle = nullptr;
  // A connection is leased to one thread at a time (connection_pool.h): SQLite's own mutexes on
  // every call would only cost.
  int code =
      sqlite3_open_v2(path.c_str(), &handle,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  // The handle must be closed even when opening failed.
  std::unique_ptr<SqliteDatabase> db(new SqliteDatabase(handle, path.string()));
  std::string doing = "opening database " + path.string();
  if (code != SQLITE_OK) return db->last_error(doing, code);
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, kBusyTimeoutMs);
  auto journal = db->prepare("PRAGMA journal_mode = WAL");
  if (!journal) return std::move(journal).take_error().with_context(doing);
  auto row = journal->step();
  if (!row) return std::move(row).take_error().with_context(doing);
  if (!*row || journal->text(0) != "wal") {
    return Error(ErrorKind::kUnavailable,
                 doing + ": the file system does not support SQLite's WAL mode (journal mode is " +
                     (*row ? journal->text(0) : std::string("unknown")) + ")");
  }
  // In WAL mode, synchronous=NORMAL writes every commit to the WAL file before COMMIT returns and
  // fsyncs the WAL only at checkpoints. A committed transaction therefore survives the death of
  // the process (kill -9, a crash): it is in the kernel's page cache. An OS crash or a power cut
  // may lose the last commits, but never corrupts the database. FULL would fsync every commit.
  if (auto set = db->execute("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON"); !set) {
    return std::move(set).take_error().with_context(doing);
  }
  return db;
}

SqliteDatabase::~SqliteDatabase() {
  for (auto& [sql, statement] : idle_statements_) sqlite3_finalize(statement);
  sqlite3_close_v2(handle_);
}

Result<void> SqliteDatabase::execute(std::string_view sql) {
  std::string text(sql);
  int code = sqlite3_exec(handle_, text.c_str(), nullptr, nullptr, nullptr);
  if (code != SQLITE_OK) return last_error("running \"" + abbreviate_sql(sql) + "\"", code);
  return ok();
}

Result<Statement> SqliteDatabase::prepare(std::string_view sql) {
  std::string text(sql);
  if (auto idle = idle_statements_.find(text); idle != idle_statements_.end()) {
    sqlite3_stmt* handle = idle->second;
    idle_statements_.erase(idle);
    return Statement(std::make_unique<SqliteStatement>(this, handle, std::move(text)));
  }
  sqlite3_stmt* handle = nullptr;
  int code = sqlite3_prepare_v3(handle_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &handle, nullptr);
  if (code != SQLITE_OK) {
    sqlite3_finalize(handle);
    return last_error("preparing \"" + abbreviate_sql(sql) + "\"", code);
  }
  return Statement(std::make_unique<SqliteStatement>(this, handle, std::move(text)));
}

void SqliteDatabase::release(std::string sql, sqlite3_stmt* handle) noexcept {
  sqlite3_reset(handle);
  sqlite3_clear_bindings(handle);
  try {
    // The same text prepared twice at once (a nested query): one of the two is enough to keep.
    if (idle_statements_.try_emplace(std::move(sql), handle).second) return;
  } catch (const std::bad_alloc&) {  // called from destructors: keep nothing rather than throw
  }
  sqlite3_finalize(handle);
}

int64_t SqliteDatabase::changes() const { return sqlite3_changes64(handle_); }

bool SqliteDatabase::in_transaction() const { return sqlite3_get_autocommit(handle_) == 0; }

// BEGIN, COMMIT and ROLLBACK run on every operation: as cached statements, parsed once.
Result<void> SqliteDatabase::run_cached(std::string_view sql) {
  auto statement = prepare(sql);
  if (!statement) return std::move(statement).take_error();
  return statement->run();
}

Result<void> SqliteDatabase::begin(TransactionKind kind) {
  // IMMEDIATE takes the write lock now, so that the commit cannot meet SQLITE_BUSY.
  return run_cached(kind == TransactionKind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Result<void> SqliteDatabase::commit() { return run_cached("COMMIT"); }

void SqliteDatabase::rollback() noexcept {
  // SQLite rolls some failed transactions back by itself; only an open one needs ROLLBACK.
  if (in_transaction()) (void)run_cached("ROLLBACK");
}

Error SqliteDatabase::last_error(std::string_view doing, int code) const {
  std::string message(doing);
  message += ": ";
  // The connection's message describes the last failure; fall back to the code's generic text.
  message += sqlite3_errcode(handle_) == code ? sqlite3_errmsg(handle_) : sqlite3_errstr(code);
  int sys_errno = 0;
  switch (code & 0xff) {
    case SQLITE_FULL:
      // SQLite's unix VFS turns a write that met ENOSPC into SQLITE_FULL and keeps no errno for
      // it (sqlite3_system_errno would be an older failure's).
      sys_errno = ENOSPC;
      break;
    case SQLITE_IOERR:  // EROFS, EDQUOT, EIO...: the errno of the system call that failed
    case SQLITE_CANTOPEN:
      sys_errno = sqlite3_system_errno(handle_);
      break;
    default:
      break;
  }
  return Error(kind_of(code), std::move(message), sys_errno);
}

}  // namespace dormant::server::storage
