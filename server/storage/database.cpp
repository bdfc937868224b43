#include "server/storage/database.h"

#include <cctype>
#include <string>

namespace dormant::server::storage {
namespace {

constexpr size_t kSqlInMessages = 80;

}  // namespace

std::string abbreviate_sql(std::string_view sql) {
  std::string line;
  bool space = false;
  for (char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
  }
  if (line.size() > kSqlInMessages) {
    line.resize(kSqlInMessages);
    line += "...";
  }
  return line;
}

std::string values_rows(size_t rows, const std::vector<std::string_view>& columns) {
  std::string sql = "VALUES ";
  int parameter = 0;
  for (size_t row = 0; row < rows; ++row) {
    sql += row == 0 ? "(" : ", (";
    bool first = true;
    for (std::string_view column : columns) {
      if (!first) sql += ", ";
      first = false;
      size_t mark = column.find('?');
      sql.append(column.substr(0, mark));
      if (mark == std::string_view::npos) continue;
      sql += '?' + std::to_string(++parameter);
      sql.append(column.substr(mark + 1));
    }
    sql += ')';
  }
  return sql;
}

Result<void> Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) {
      Error error = std::move(row).take_error();
      reset();
      return error;
    }
    if (!*row) break;
  }
  reset();
  return ok();
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

std::optional<int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<double> Statement::optional_float64(int column) const {
  if (is_null(column)) return std::nullopt;
  return float64(column);
}

Result<void> lock_host(Database& db, const std::string& hostname, const std::string& service) {
  if (db.dialect() == Dialect::kSqlite) return ok();
  // The key is a hash: two hosts that share one merely wait for each other.
  auto lock = db.prepare("SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))");
  if (!lock) return std::move(lock).take_error();
  return lock->bind_all(hostname + '\n' + service).run();
}

Result<Transaction> Transaction::begin(Database& db, Kind kind) {
  auto begun = db.begin(kind);
  if (!begun) return std::move(begun).take_error();
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr && db_->in_transaction()) db_->rollback();
}

Result<void> Transaction::commit() {
  auto committed = db_->commit();
  if (!committed) return committed;
  db_ = nullptr;
  return ok();
}

}  // namespace dormant::server::storage
