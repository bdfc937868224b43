#include "server/storage/profile_rows.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kSelectProfiles = R"sql(
SELECT gpid, service_name, hostname, start_ms, end_ms, received_ms, raw_size, compressed_size,
       file_name, samples, idle_samples, cpu_seconds
FROM profiles
)sql";

ProfileRow read_row(const Statement& row) {
  ProfileRow out;
  StoredProfile& profile = out.profile;
  profile.gpid = row.int64(0);
  profile.service_name = row.text(1);
  profile.hostname = row.text(2);
  profile.start_time = from_unix_ms(row.int64(3));
  profile.end_time = from_unix_ms(row.int64(4));
  profile.received_at = from_unix_ms(row.int64(5));
  profile.raw_size = row.int64(6);
  profile.compressed_size = row.int64(7);
  out.file_name = row.optional_text(8);
  profile.samples = row.optional_int64(9);
  profile.idle_samples = row.optional_int64(10);
  profile.cpu_seconds = row.optional_float64(11);
  return out;
}

std::optional<int64_t> optional_ms(const std::optional<TimePoint>& time) {
  if (!time) return std::nullopt;
  return to_unix_ms(*time);
}

}  // namespace

Result<int64_t> insert_profile(Database& db, const ProfileRow& row) {
  const StoredProfile& profile = row.profile;
  auto insert = db.prepare(R"sql(
INSERT INTO profiles (service_name, hostname, start_ms, end_ms, received_ms, raw_size,
                      compressed_size, file_name, cpu_avg, mem_avg, instance_type, rolled_up,
                      processors, samples, idle_samples, cpu_seconds)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
RETURNING gpid)sql");
  if (!insert) return std::move(insert).take_error();
  auto inserted =
      insert
          ->bind_all(profile.service_name, profile.hostname, to_unix_ms(profile.start_time),
                     to_unix_ms(profile.end_time), to_unix_ms(profile.received_at),
                     profile.raw_size, profile.compressed_size, row.file_name, row.cpu_avg,
                     row.mem_avg, row.instance_type, row.rolled_up, row.processors, profile.samples,
                     profile.idle_samples, profile.cpu_seconds)
          .step();
  if (!inserted) return std::move(inserted).take_error();
  if (!*inserted) return Error(ErrorKind::kSystem, "inserting a profile returned no gpid");
  int64_t gpid = insert->int64(0);
  insert->reset();
  return gpid;
}

Result<std::optional<ProfileRow>> find_profile(Database& db, int64_t gpid) {
  auto select = db.prepare(std::string(kSelectProfiles) + "WHERE gpid = ?1");
  if (!select) return std::move(select).take_error();
  auto row = select->bind_all(gpid).step();
  if (!row) return std::move(row).take_error();
  if (!*row) return std::optional<ProfileRow>();
  return std::optional<ProfileRow>(read_row(*select));
}

Result<std::vector<StoredProfile>> find_profiles(Database& db, const ProfileFilter& filter) {
  auto select = db.prepare(std::string(kSelectProfiles) + R"sql(
WHERE (CAST(?1 AS TEXT) IS NULL OR service_name = ?1)
  AND (CAST(?2 AS TEXT) IS NULL OR hostname = ?2)
  AND (CAST(?3 AS BIGINT) IS NULL OR end_ms >= ?3)
  AND (CAST(?4 AS BIGINT) IS NULL OR start_ms <= ?4)
ORDER BY start_ms DESC, gpid DESC
LIMIT ?5)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(filter.service_name, filter.hostname, optional_ms(filter.since),
                   optional_ms(filter.until), sql_limit(filter.limit));
  std::vector<StoredProfile> profiles;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    profiles.push_back(read_row(*select).profile);
  }
  return profiles;
}

Result<std::set<std::string>> profile_file_names(Database& db) {
  auto select = db.prepare("SELECT file_name FROM profiles WHERE file_name IS NOT NULL");
  if (!select) return std::move(select).take_error();
  std::set<std::string> names;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    names.insert(select->text(0));
  }
  return names;
}

Result<std::vector<int64_t>> profiles_not_rolled_up(Database& db, int64_t limit) {
  auto select = db.prepare("SELECT gpid FROM profiles WHERE rolled_up = 0 ORDER BY gpid LIMIT ?1");
  if (!select) return std::move(select).take_error();
  select->bind_all(limit);
  std::vector<int64_t> gpids;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    gpids.push_back(select->int64(0));
  }
  select->reset();
  return gpids;
}

Result<bool> mark_rolled_up(Database& db, int64_t gpid, const std::string& instance_type) {
  auto update = db.prepare(
      "UPDATE profiles SET rolled_up = 1, instance_type = ?2 WHERE gpid = ?1 AND rolled_up = 0");
  if (!update) return std::move(update).take_error();
  if (auto ran = update->bind_all(gpid, instance_type).run(); !ran) {
    return std::move(ran).take_error();
  }
  return db.changes() == 1;
}

Result<DeletedProfiles> delete_profiles_before(Database& db, TimePoint cutoff, int64_t batch) {
  auto remove = db.prepare(R"sql(
DELETE FROM profiles
WHERE gpid IN (SELECT gpid FROM profiles WHERE received_ms < ?1 ORDER BY received_ms LIMIT ?2)
RETURNING file_name)sql");
  if (!remove) return std::move(remove).take_error();
  remove->bind_all(to_unix_ms(cutoff), batch);
  DeletedProfiles deleted;
  for (;;) {
    auto row = remove->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    ++deleted.count;
    if (auto name = remove->optional_text(0)) deleted.file_names.push_back(std::move(*name));
  }
  remove->reset();
  return deleted;
}

Result<int64_t> stored_profile_bytes(Database& db) {
  auto sum = db.prepare("SELECT CAST(COALESCE(SUM(compressed_size), 0) AS BIGINT) FROM profiles");
  if (!sum) return std::move(sum).take_error();
  auto row = sum->step();
  if (!row) return std::move(row).take_error();
  return *row ? sum->int64(0) : 0;
}

}  // namespace dormant::server::storage
