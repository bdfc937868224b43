#include "server/storage/args_rows.h"

#include <array>
#include <utility>
#include <vector>

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

Result<std::string> store_text(Database& db, const std::string& text) {
  std::string digest = text_digest(text);
  // On PostgreSQL an update, not DO NOTHING: it locks the row until the transaction that refers
  // to it commits, and delete_unreferenced_args skips locked rows. (SQLite's writers take turns,
  // and an update there would write the whole object again.)
  auto insert = db.prepare(
      db.dialect() == Dialect::kPostgres
          ? "INSERT INTO additional_args (digest, args) VALUES (?1, ?2) "
            "ON CONFLICT (digest) DO UPDATE SET digest = excluded.digest"
          : "INSERT INTO additional_args (digest, args) VALUES (?1, ?2) ON CONFLICT DO NOTHING");
  if (!insert) return std::move(insert).take_error();
  if (auto inserted = insert->bind_all(digest, text).run(); !inserted) {
    return std::move(inserted).take_error();
  }
  return digest;
}

// Moves the inline objects of `table` (keyed by `key`) into additional_args, a batch at a time:
// a database that a fan-out filled may hold gigabytes of them.
Result<void> move_inline_args(Database& db, std::string_view table, std::string_view key) {
  constexpr int64_t kBatch = 100;
  auto select =
      db.prepare("SELECT " + std::string(key) + ", additional_args FROM " + std::string(table) +
                 " WHERE additional_args IS NOT NULL AND args_digest IS NULL LIMIT ?1");
  if (!select) return std::move(select).take_error();
  auto update = db.prepare("UPDATE " + std::string(table) + " SET args_digest = ?2 WHERE " +
                           std::string(key) + " = ?1");
  if (!update) return std::move(update).take_error();
  for (;;) {
    std::vector<std::pair<std::string, std::string>> rows;
    select->bind_all(kBatch);
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      rows.emplace_back(select->text(0), select->text(1));
    }
    select->reset();
    if (rows.empty()) return ok();
    for (const auto& [id, text] : rows) {
      auto digest = store_text(db, text);
      if (!digest) return std::move(digest).take_error();
      if (auto updated = update->bind_all(id, *digest).run(); !updated) return updated;
    }
  }
}

}  // namespace

Result<std::string> ArgsWriter::store(Database& db, const nlohmann::json& args) {
  if (!last_digest_.empty() && args == last_) return last_digest_;
  auto digest = store_text(db, json_text(args));
  if (!digest) return digest;
  last_ = args;
  last_digest_ = *digest;
  return digest;
}

Result<std::optional<nlohmann::json>> read_args(Database& db, const std::string& digest) {
  auto select = db.prepare("SELECT args FROM additional_args WHERE digest = ?1");
  if (!select) return std::move(select).take_error();
  select->bind_all(digest);
  auto row = select->step();
  if (!row) return std::move(row).take_error();
  if (!*row) return std::optional<nlohmann::json>();
  auto args = parse_json_column(select->text(0), "additional_args.args");
  if (!args) return std::move(args).take_error();
  return std::optional<nlohmann::json>(std::move(*args));
}

Result<int64_t> delete_unreferenced_args(Database& db, int64_t batch) {
  // On PostgreSQL a request being written may have stored an object and not yet committed the
  // rows that refer to it: its lock keeps the object.
  std::string skip_locked = db.dialect() == Dialect::kPostgres ? " FOR UPDATE SKIP LOCKED" : "";
  auto remove = db.prepare(R"sql(
DELETE FROM additional_args WHERE digest IN (
  SELECT digest FROM additional_args AS stored
  WHERE NOT EXISTS (SELECT 1 FROM commands WHERE commands.args_digest = stored.digest)
    AND NOT EXISTS (SELECT 1 FROM profiling_requests AS request
                    WHERE request.args_digest = stored.digest)
  LIMIT ?1)sql" + skip_locked +
                           ")");
  if (!remove) return std::move(remove).take_error();
  if (auto done = remove->bind_all(batch).run(); !done) return std::move(done).take_error();
  return db.changes();
}

Result<void> move_args_to_their_table(Database& db) {
  if (auto moved = move_inline_args(db, "commands", "command_id"); !moved) return moved;
  if (auto moved = move_inline_args(db, "profiling_requests", "request_id"); !moved) return moved;
  return db.execute(R"sql(
ALTER TABLE commands DROP COLUMN additional_args;
ALTER TABLE commands DROP COLUMN combined_config;
ALTER TABLE profiling_requests DROP COLUMN additional_args;
)sql");
}

}  // namespace dormant::server::storage
