// The profiles table: one row per uploaded profile, naming its file where the body is one (see
// profile_bodies.h). Callers hold the transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

struct ProfileRow {
  StoredProfile profile;
  std::optional<std::string> file_name;
  std::optional<double> cpu_avg;
  std::optional<double> mem_avg;
  std::string instance_type;
  int64_t processors = 0;  // the host's, as the upload's header gave them; 0: not given
  bool rolled_up = true;   // false: the rollups still lack it (stored before they existed)
};

// Returns the new row's gpid; `row.profile.gpid` is ignored.
Result<int64_t> insert_profile(Database& db, const ProfileRow& row);
Result<std::optional<ProfileRow>> find_profile(Database& db, int64_t gpid);
Result<std::vector<StoredProfile>> find_profiles(Database& db, const ProfileFilter& filter);
Result<std::set<std::string>> profile_file_names(Database& db);
// Up to `limit` profiles the rollups still lack (stored before them), oldest first.
Result<std::vector<int64_t>> profiles_not_rolled_up(Database& db, int64_t limit);
// Marks a profile as in the rollups, with the instance type its header gives; false when it was
// already (another server did it meanwhile).
Result<bool> mark_rolled_up(Database& db, int64_t gpid, const std::string& instance_type);
// What the profiles' bodies take, compressed.
Result<int64_t> stored_profile_bytes(Database& db);

struct DeletedProfiles {
  int64_t count = 0;
  std::vector<std::string> file_names;  // of those that had a file
};
// Deletes up to `batch` profiles received before `cutoff`, oldest first.
Result<DeletedProfiles> delete_profiles_before(Database& db, TimePoint cutoff, int64_t batch);

}  // namespace dormant::server::storage
