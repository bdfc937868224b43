#include "server/storage/postgres_database.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <vector>

#include <libpq-fe.h>

namespace dormant::server::storage {
namespace {

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using OwnedResult = std::unique_ptr<PGresult, ResultDeleter>;

struct SqlState {
  ErrorKind kind;
  int sys_errno;
};

// What the store does about a failure is decided by its SQLSTATE class.
SqlState sort_sqlstate(std::string_view state) {
  if (state == "40001" || state == "40P01") return {ErrorKind::kConflict, 0};
  if (state == "53100") return {ErrorKind::kUnavailable, ENOSPC};
  if (state == "25006") return {ErrorKind::kUnavailable, EROFS};  // a read-only standby
  if (state.starts_with("08") || state.starts_with("53") || state == "57P01" || state == "57P02" ||
      state == "57P03") {
    return {ErrorKind::kUnavailable, ECONNRESET};
  }
  if (state == "57014" || state == "55P03") return {ErrorKind::kTimeout, 0};
  if (state.starts_with("22") || state.starts_with("23")) return {ErrorKind::kInvalidArgument, 0};
  return {ErrorKind::kSystem, 0};
}

std::string trimmed(const char* message) {
  std::string text = message == nullptr ? "" : message;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

class PostgresStatement final : public StatementBackend {
 public:
  PostgresStatement(PostgresDatabase* db, std::string name, std::string sql)
      : db_(db), name_(std::move(name)), sql_(std::move(sql)) {}

  void bind_int64(int index, int64_t value) override { set(index, std::to_string(value), 0); }
  void bind_double(int index, double value) override { set(index, std::to_string(value), 0); }
  void bind_text(int index, std::string_view value) override { set(index, std::string(value), 0); }
  void bind_blob(int index, std::string_view bytes) override { set(index, std::string(bytes), 1); }
  void bind_null(int index) override { set(index, std::nullopt, 0); }

  Result<bool> step() override {
    if (!result_) {
      if (bind_error_) return *bind_error_;
      std::vector<const char*> values;
      std::vector<int> lengths;
      for (const auto& value : values_) {
        values.push_back(value ? value->c_str() : nullptr);
        lengths.push_back(value ? static_cast<int>(value->size()) : 0);
      }
      auto result = db_->run_prepared(name_, sql_, static_cast<int>(values.size()), values.data(),
                                      lengths.data(), formats_.data());
      if (!result) return std::move(result).take_error();
      result_.reset(*result);
      row_ = -1;
    }
    return ++row_ < PQntuples(result_.get());
  }
  void reset() override {
    result_.reset();
    bind_error_.reset();
  }

  bool is_null(int column) const override { return PQgetisnull(result_.get(), row_, column) != 0; }
  int64_t int64(int column) const override {
    const char* text = PQgetvalue(result_.get(), row_, column);
    if (text[0] == 't' || text[0] == 'f') return text[0] == 't';  // a boolean column
    int64_t value = 0;
    std::from_chars(text, text + PQgetlength(result_.get(), row_, column), value);
    return value;
  }
  double float64(int column) const override {
    const char* text = PQgetvalue(result_.get(), row_, column);
    double value = 0;
    std::from_chars(text, text + PQgetlength(result_.get(), row_, column), value);
    return value;
  }
  std::string_view text(int column) const override {
    return std::string_view(PQgetvalue(result_.get(), row_, column),
                            static_cast<size_t>(PQgetlength(result_.get(), row_, column)));
  }
  std::string blob(int column) const override {
    size_t length = 0;
    unsigned char* bytes = PQunescapeBytea(
        reinterpret_cast<const unsigned char*>(PQgetvalue(result_.get(), row_, column)), &length);
    if (bytes == nullptr) return {};
    std::string out(reinterpret_cast<const char*>(bytes), length);
    PQfreemem(bytes);
    return out;
  }

 private:
  void set(int index, std::optional<std::string> value, int format) {
    if (index < 1 || index > 0xffff) {
      if (!bind_error_) {
        bind_error_ = Error::invalid_argument("parameter " + std::to_string(index) + " of \"" +
                                              abbreviate_sql(sql_) + "\" is out of range");
      }
      return;
    }
    auto slot = static_cast<size_t>(index);
    if (values_.size() < slot) {
      values_.resize(slot);
      formats_.resize(slot, 0);
    }
    values_[slot - 1] = std::move(value);
    formats_[slot - 1] = format;
  }

  PostgresDatabase* db_;
  std::string name_;
  std::string sql_;
  std::vector<std::optional<std::string>> values_;
  std::vector<int> formats_;  // 0: text, 1: binary (bytea)
  std::optional<Error> bind_error_;
  OwnedResult result_;
  int row_ = -1;
};

}  // namespace

std::string to_postgres_parameters(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 8);
  int next = 1;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;  // a doubled quote reopens at once: the same text
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c != '?') {
      out += c;
      continue;
    }
    size_t digits = i + 1;
    while (digits < sql.size() && std::isdigit(static_cast<unsigned char>(sql[digits]))) ++digits;
    if (digits == i + 1) {
      out += '$' + std::to_string(next++);
    } else {
      out += '$';
      out.append(sql.substr(i + 1, digits - i - 1));
      next = std::atoi(std::string(sql.substr(i + 1, digits - i - 1)).c_str()) + 1;
      i = digits - 1;
    }
  }
  return out;
}

std::string describe_postgres_url(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    PQfreemem(error);
    return "a PostgreSQL database (its URL does not parse)";
  }
  std::string dbname, host, port, user;
  for (PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (option->val == nullptr) continue;
    std::string_view keyword = option->keyword;
    if (keyword == "dbname") dbname = option->val;
    if (keyword == "host") host = option->val;
    if (keyword == "port") port = option->val;
    if (keyword == "user") user = option->val;
  }
  PQconninfoFree(options);
  std::string text = "PostgreSQL database " + (dbname.empty() ? std::string("(default)") : dbname);
  if (!user.empty()) text += " as " + user;
  if (!host.empty()) text += " on " + host + (port.empty() ? "" : ":" + port);
  return text;
}

Result<std::unique_ptr<PostgresDatabase>> PostgresDatabase::connect(const std::string& url) {
  const std::string statement_timeout =
      "-c statement_timeout=" + std::to_string(kStatementTimeoutMs) +
      " -c idle_in_transaction_session_timeout=" + std::to_string(kStatementTimeoutMs) +
      " -c lock_timeout=" + std::to_string(kLockTimeoutMs) + " -c client_min_messages=warning";
  const std::string connect_timeout = std::to_string(kConnectTimeoutS);
  // The defaults come first: settings in `url` (expanded in place of dbname) override them.
  const char* keywords[] = {"connect_timeout",
                            "application_name",
                            "options",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "tcp_user_timeout",
                            "dbname",
                            nullptr};
  const char* values[] = {connect_timeout.c_str(),
                          "dormant-server",
                          statement_timeout.c_str(),
                          "10",
                          "5",
                          "3",
                          "30000",
                          url.c_str(),
                          nullptr};
  PGconn* connection = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  std::string location = describe_postgres_url(url);
  std::unique_ptr<PostgresDatabase> db(new PostgresDatabase(connection, location));
  if (connection == nullptr) {
    return Error(ErrorKind::kUnavailable, "connecting to " + location + ": out of memory");
  }
  if (PQstatus(connection) != CONNECTION_OK) {
    return Error(ErrorKind::kUnavailable,
                 "connecting to " + location + ": " + trimmed(PQerrorMessage(connection)),
                 ECONNREFUSED);
  }
  if (PQserverVersion(connection) < 120000) {
    return Error(ErrorKind::kUnavailable, location + " runs PostgreSQL " +
                                              std::to_string(PQserverVersion(connection)) +
                                              "; dormant-server needs 12 or newer");
  }
  return db;
}

PostgresDatabase::~PostgresDatabase() { PQfinish(connection_); }

bool PostgresDatabase::broken() const { return PQstatus(connection_) != CONNECTION_OK; }

bool PostgresDatabase::in_transaction() const {
  return PQtransactionStatus(connection_) != PQTRANS_IDLE &&
         PQtransactionStatus(connection_) != PQTRANS_UNKNOWN;
}

Error PostgresDatabase::error_of(std::string_view doing, const PGresult* result) const {
  std::string message(doing);
  message += ": ";
  const char* state = result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  std::string words =
      trimmed(result == nullptr ? PQerrorMessage(connection_) : PQresultErrorMessage(result));
  message += words.empty() ? "no answer from the server" : words;
  if (state == nullptr) {
    // No SQLSTATE: libpq itself failed, the connection most likely.
    return Error(ErrorKind::kUnavailable, std::move(message), ECONNRESET);
  }
  SqlState sorted = sort_sqlstate(state);
  return Error(sorted.kind, std::move(message), sorted.sys_errno);
}

Result<void> PostgresDatabase::run_simple(std::string_view sql, std::string_view expected_tag) {
  std::string text(sql);
  OwnedResult result(PQexec(connection_, text.c_str()));
  ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return error_of("running \"" + abbreviate_sql(sql) + "\"", result.get());
  }
  // COMMIT of a transaction that had failed answers ROLLBACK.
  if (!expected_tag.empty() && PQcmdStatus(result.get()) != expected_tag) {
    return Error(ErrorKind::kConflict,
                 "running \"" + text + "\": the server answered " + PQcmdStatus(result.get()));
  }
  return ok();
}

Result<void> PostgresDatabase::execute(std::string_view sql) { return run_simple(sql); }

Result<Statement> PostgresDatabase::prepare(std::string_view sql) {
  std::string text = to_postgres_parameters(sql);
  auto known = prepared_.find(text);
  if (known == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size() + 1);
    OwnedResult result(PQprepare(connection_, name.c_str(), text.c_str(), 0, nullptr));
    if (!result || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
      return error_of("preparing \"" + abbreviate_sql(sql) + "\"", result.get());
    }
    known = prepared_.emplace(text, std::move(name)).first;
  }
  return Statement(std::make_unique<PostgresStatement>(this, known->second, std::string(sql)));
}

Result<PGresult*> PostgresDatabase::run_prepared(const std::string& name, std::string_view sql,
                                                 int count, const char* const* values,
                                                 const int* lengths, const int* formats) {
  OwnedResult result(
      PQexecPrepared(connection_, name.c_str(), count, values, lengths, formats, /*text=*/0));
  ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return error_of("running \"" + abbreviate_sql(sql) + "\"", result.get());
  }
  const char* tuples = PQcmdTuples(result.get());
  changes_ = tuples[0] == '\0' ? 0 : std::strtoll(tuples, nullptr, 10);
  return result.release();
}

Result<void> PostgresDatabase::begin(TransactionKind kind) {
  return run_simple(kind == TransactionKind::kWrite
                        ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                        : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

Result<void> PostgresDatabase::commit() { return run_simple("COMMIT", "COMMIT"); }

void PostgresDatabase::rollback() noexcept {
  if (in_transaction()) (void)run_simple("ROLLBACK");
}

}  // namespace dormant::server::storage
