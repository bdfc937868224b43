#include "server/storage/rollup_rows.h"

#include <algorithm>
#include <bit>

#include <spdlog/spdlog.h>

#include "server/storage/rollup_blob.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kTotals =
    "profiles, samples, first_start_ms, last_end_ms, frequency_hz, stacks";

int64_t as_column(StackId id) { return std::bit_cast<int64_t>(id); }
StackId as_id(int64_t column) { return std::bit_cast<StackId>(column); }

int64_t capped(uint64_t samples) {
  return samples > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(samples);
}

std::string bucket_where(bool by_label) {
  std::string where = "WHERE service_name = ?1 AND resolution_s = ?2 AND bucket_ms = ?3";
  if (by_label) where += " AND hostname = ?4 AND container = ?5 AND instance_type = ?6";
  return where;
}

Statement& bind_key(Statement& statement, const BucketKey& key) {
  statement.bind_all(key.service, static_cast<int64_t>(key.resolution), key.bucket_ms);
  if (key.label) {
    statement.bind_from(4, key.label->hostname, key.label->container, key.label->instance_type);
  }
  return statement;
}

BucketTotals read_totals(const Statement& row, int first) {
  return {row.int64(first), row.int64(first + 1), row.int64(first + 2), row.int64(first + 3),
          row.int64(first + 4)};
}

}  // namespace

void BucketTotals::add(const BucketTotals& other) {
  profiles += other.profiles;
  samples = capped(static_cast<uint64_t>(samples) + static_cast<uint64_t>(other.samples));
  first_start_ms = std::min(first_start_ms, other.first_start_ms);
  last_end_ms = std::max(last_end_ms, other.last_end_ms);
  if (frequency_hz != other.frequency_hz) frequency_hz = 0;
}

Result<void> add_to_bucket(Database& db, const BucketKey& key, std::span<const StackCount> stacks,
                           int64_t start_ms, int64_t end_ms, uint64_t frequency_hz,
                           size_t max_stacks) {
  bool by_label = key.label != nullptr;
  std::string table = by_label ? "label_rollups" : "service_rollups";
  auto select = db.prepare("SELECT " + std::string(kTotals) + " FROM " + table + " " +
                           bucket_where(by_label));
  if (!select) return std::move(select).take_error();
  auto found = bind_key(*select, key).step();
  if (!found) return std::move(found).take_error();

  uint64_t added_samples = 0;
  for (const StackCount& stack : stacks) added_samples += stack.count;
  BucketTotals totals{1, capped(added_samples), start_ms, end_ms,
                      static_cast<int64_t>(frequency_hz)};
  std::vector<StackCount> sum;
  Result<std::vector<StackCount>> held =
      *found ? decode_stacks(select->blob(5)) : std::vector<StackCount>{};
  if (!held) {
    // Unreadable (damaged on disk): started again, or every later upload of its time would fail.
    spdlog::error("a rollup bucket of {} at {} is unreadable ({}); it starts again", key.service,
                  key.bucket_ms, held.error().message());
  }
  if (*found && held) {
    sum = add_stacks(*held, stacks, max_stacks);
    totals.add(read_totals(*select, 0));
  } else {
    sum = add_stacks({}, stacks, max_stacks);
  }
  select->reset();

  return put_bucket(db, key, sum, totals);
}

Result<void> put_bucket(Database& db, const BucketKey& key, std::span<const StackCount> stacks,
                        const BucketTotals& totals) {
  bool by_label = key.label != nullptr;
  std::string table = by_label ? "label_rollups" : "service_rollups";
  std::string columns = "service_name, resolution_s, bucket_ms, ";
  std::string key_columns = "service_name, resolution_s, bucket_ms";
  if (by_label) {
    columns += "hostname, container, instance_type, ";
    key_columns += ", hostname, container, instance_type";
  }
  int first_total = by_label ? 7 : 4;
  std::string values;
  for (int i = 1; i < first_total + 6; ++i) values += (i > 1 ? ", ?" : "?") + std::to_string(i);
  auto upsert = db.prepare("INSERT INTO " + table + " (" + columns + std::string(kTotals) +
                           ") VALUES (" + values + ") ON CONFLICT (" + key_columns +
                           ") DO UPDATE SET profiles = excluded.profiles, samples = "
                           "excluded.samples, first_start_ms = excluded.first_start_ms, "
                           "last_end_ms = excluded.last_end_ms, frequency_hz = "
                           "excluded.frequency_hz, stacks = excluded.stacks");
  if (!upsert) return std::move(upsert).take_error();
  bind_key(*upsert, key)
      .bind_from(first_total, totals.profiles, totals.samples, totals.first_start_ms,
                 totals.last_end_ms, totals.frequency_hz)
      .bind_blob(first_total + 5, encode_stacks(stacks));
  return upsert->run();
}

Result<void> remember_stack_texts(Database& db, std::string_view service, int64_t day_ms,
                                  std::span<const std::pair<StackId, std::string>> texts) {
  constexpr size_t kRowsPerStatement = 64;
  for (size_t first = 0; first < texts.size(); first += kRowsPerStatement) {
    size_t rows = std::min(kRowsPerStatement, texts.size() - first);
    auto insert = db.prepare(
        "INSERT INTO rollup_stacks (service_name, stack_id, stack, last_day_ms) " +
        values_rows(rows, {"?", "?", "?", "?"}) +
        " ON CONFLICT (service_name, stack_id) DO UPDATE SET last_day_ms = excluded.last_day_ms"
        " WHERE rollup_stacks.last_day_ms < excluded.last_day_ms");
    if (!insert) return std::move(insert).take_error();
    for (size_t row = 0; row < rows; ++row) {
      const auto& [id, text] = texts[first + row];
      insert->bind_from(static_cast<int>(row * 4 + 1), service, as_column(id), text, day_ms);
    }
    if (auto ran = insert->run(); !ran) return ran;
  }
  return {};
}

Result<void> read_buckets(Database& db, std::string_view service,
                          std::span<const BucketRange> ranges, bool by_label,
                          const std::optional<std::string>& hostname,
                          const std::function<Result<void>(const BucketRow&)>& visit,
                          bool with_stacks) {
  std::string totals(kTotals);
  if (!with_stacks) totals.replace(totals.find("stacks"), 6, "NULL");
  std::string sql = "SELECT resolution_s, bucket_ms, " + totals;
  if (by_label) sql += ", hostname, container, instance_type";
  sql += by_label ? " FROM label_rollups" : " FROM service_rollups";
  sql += " WHERE service_name = ?1 AND resolution_s = ?2 AND bucket_ms >= ?3 AND bucket_ms < ?4";
  if (by_label) sql += " AND (CAST(?5 AS TEXT) IS NULL OR hostname = ?5)";
  auto select = db.prepare(sql);
  if (!select) return std::move(select).take_error();
  for (const BucketRange& range : ranges) {
    select->bind_all(service, static_cast<int64_t>(range.resolution), range.first_ms, range.end_ms);
    if (by_label) select->bind(5, hostname);
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      BucketRow bucket;
      bucket.resolution = static_cast<Resolution>(select->int64(0));
      bucket.bucket_ms = select->int64(1);
      bucket.totals = read_totals(*select, 2);
      std::string stacks = with_stacks ? select->blob(7) : std::string();
      bucket.stacks = stacks;
      if (by_label) bucket.label = LabelKey{select->text(8), select->text(9), select->text(10)};
      if (auto visited = visit(bucket); !visited) {
        select->reset();
        return visited;
      }
    }
    select->reset();
  }
  return {};
}

Result<std::set<std::string>> read_bucket_hosts(Database& db, std::string_view service,
                                                std::span<const BucketRange> ranges) {
  auto select = db.prepare(
      "SELECT DISTINCT hostname FROM label_rollups WHERE service_name = ?1 AND resolution_s = ?2 "
      "AND bucket_ms >= ?3 AND bucket_ms < ?4");
  if (!select) return std::move(select).take_error();
  std::set<std::string> hosts;
  for (const BucketRange& range : ranges) {
    select->bind_all(service, static_cast<int64_t>(range.resolution), range.first_ms, range.end_ms);
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      hosts.insert(select->text(0));
    }
    select->reset();
  }
  return hosts;
}

Result<void> read_stack_texts(Database& db, std::string_view service, std::span<const StackId> ids,
                              const std::function<void(StackId, std::string_view)>& found) {
  constexpr size_t kIdsPerStatement = 256;
  std::string sql =
      "SELECT stack_id, stack FROM rollup_stacks WHERE service_name = ?1 AND "
      "stack_id IN (";
  for (size_t i = 0; i < kIdsPerStatement; ++i) {
    sql += (i > 0 ? ", ?" : "?") + std::to_string(i + 2);
  }
  sql += ")";
  auto select = db.prepare(sql);
  if (!select) return std::move(select).take_error();
  for (size_t first = 0; first < ids.size(); first += kIdsPerStatement) {
    select->bind(1, service);
    for (size_t i = 0; i < kIdsPerStatement; ++i) {
      // The last statement's unused places repeat its first id.
      size_t at = first + i < ids.size() ? first + i : first;
      select->bind(static_cast<int>(i + 2), as_column(ids[at]));
    }
    for (;;) {
      auto row = select->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      found(as_id(select->int64(0)), select->text_view(1));
    }
    select->reset();
  }
  return {};
}

Result<Compacted> read_compacted(Database& db, std::string_view service) {
  auto select =
      db.prepare("SELECT resolution_s, before_ms FROM rollup_compactions WHERE service_name = ?1");
  if (!select) return std::move(select).take_error();
  select->bind_all(service);
  Compacted compacted{INT64_MIN, INT64_MIN};
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    int64_t before = select->int64(1);
    if (select->int64(0) == static_cast<int64_t>(Resolution::kHour))
      compacted.hours_before_ms = before;
    if (select->int64(0) == static_cast<int64_t>(Resolution::kDay))
      compacted.days_before_ms = before;
  }
  select->reset();
  return compacted;
}

Result<void> write_compacted(Database& db, std::string_view service, Resolution resolution,
                             int64_t before_ms) {
  auto upsert = db.prepare(
      "INSERT INTO rollup_compactions (service_name, resolution_s, before_ms) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (service_name, resolution_s) DO UPDATE SET before_ms = excluded.before_ms");
  if (!upsert) return std::move(upsert).take_error();
  return upsert->bind_all(service, static_cast<int64_t>(resolution), before_ms).run();
}

Result<std::optional<int64_t>> next_minute_bucket(Database& db, std::string_view service,
                                                  int64_t from_ms) {
  auto select = db.prepare(
      "SELECT MIN(bucket_ms) FROM service_rollups WHERE service_name = ?1 AND resolution_s = 60 "
      "AND bucket_ms >= ?2");
  if (!select) return std::move(select).take_error();
  auto row = select->bind_all(service, from_ms).step();
  if (!row) return std::move(row).take_error();
  std::optional<int64_t> first = *row ? select->optional_int64(0) : std::nullopt;
  select->reset();
  return first;
}

Result<std::vector<std::string>> services_with_rollups(Database& db,
                                                       std::optional<Resolution> resolution) {
  auto select = db.prepare(
      "SELECT DISTINCT service_name FROM service_rollups WHERE CAST(?1 AS BIGINT) IS NULL OR "
      "resolution_s = ?1");
  if (!select) return std::move(select).take_error();
  select->bind(1, resolution ? std::optional<int64_t>(static_cast<int64_t>(*resolution))
                             : std::optional<int64_t>());
  std::vector<std::string> services;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    services.push_back(select->text(0));
  }
  select->reset();
  return services;
}

Result<int64_t> delete_buckets_before(Database& db, Resolution resolution, int64_t cutoff_ms,
                                      int64_t batch) {
  int64_t deleted = 0;
  for (std::string_view table : {"service_rollups", "label_rollups"}) {
    std::string key = table == "label_rollups"
                          ? "service_name, resolution_s, bucket_ms, hostname, container, "
                            "instance_type"
                          : "service_name, resolution_s, bucket_ms";
    auto remove = db.prepare("DELETE FROM " + std::string(table) + " WHERE (" + key +
                             ") IN (SELECT " + key + " FROM " + std::string(table) +
                             " WHERE resolution_s = ?1 AND bucket_ms < ?2 LIMIT ?3)");
    if (!remove) return std::move(remove).take_error();
    remove->bind_all(static_cast<int64_t>(resolution), cutoff_ms, batch);
    if (auto ran = remove->run(); !ran) return std::move(ran).take_error();
    deleted += db.changes();
  }
  return deleted;
}

Result<int64_t> delete_stack_texts_before(Database& db, int64_t cutoff_ms, int64_t batch) {
  auto remove = db.prepare(
      "DELETE FROM rollup_stacks WHERE (service_name, stack_id) IN (SELECT service_name, "
      "stack_id FROM rollup_stacks WHERE last_day_ms < ?1 LIMIT ?2)");
  if (!remove) return std::move(remove).take_error();
  remove->bind_all(cutoff_ms, batch);
  if (auto ran = remove->run(); !ran) return std::move(ran).take_error();
  return db.changes();
}

}  // namespace dormant::server::storage
