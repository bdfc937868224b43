// Where the body of an uploaded profile (its gzip-compressed collapsed text) is kept:
// - FileBodies: a file per profile in the data directory, beside SQLite (see profile_files.h for
//   why files);
// - TableBodies: the profile_bodies table of the PostgreSQL database, which every replica reads.
//
// An upload goes: prepare() before the row's transaction (the slow part: compressing, and for a
// file writing and fsyncing it), attach() inside it once the row has its gpid, abandon() when the
// row was not committed. forget() follows rows deleted by retention.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "server/storage/connection_pool.h"
#include "server/storage/database.h"
#include "server/storage/profile_files.h"
#include "server/storage/profile_rows.h"

namespace dormant::server::storage {

struct PreparedBody {
  std::optional<std::string> file_name;  // FileBodies
  std::string gzip;                      // TableBodies
  int64_t compressed_size = 0;
};

class ProfileBodies {
 public:
  virtual ~ProfileBodies() = default;
  virtual Result<PreparedBody> prepare(std::string_view collapsed) = 0;
  virtual Result<void> attach(Database& db, int64_t gpid, const PreparedBody& body) = 0;
  virtual void abandon(const PreparedBody& body) = 0;
  // The collapsed text, as uploaded.
  virtual Result<std::string> read(const ProfileRow& row) = 0;
  virtual void forget(const std::vector<std::string>& file_names) = 0;
};

class FileBodies final : public ProfileBodies {
 public:
  explicit FileBodies(std::filesystem::path dir) : files_(std::move(dir)) {}
  Result<PreparedBody> prepare(std::string_view collapsed) override;
  Result<void> attach(Database&, int64_t, const PreparedBody&) override { return ok(); }
  void abandon(const PreparedBody& body) override;
  Result<std::string> read(const ProfileRow& row) override;
  void forget(const std::vector<std::string>& file_names) override;

 private:
  ProfileFiles files_;
};

class TableBodies final : public ProfileBodies {
 public:
  // Reads lease their own connection from `pool`.
  explicit TableBodies(ConnectionPool& pool) : pool_(pool) {}
  Result<PreparedBody> prepare(std::string_view collapsed) override;
  Result<void> attach(Database& db, int64_t gpid, const PreparedBody& body) override;
  void abandon(const PreparedBody&) override {}
  Result<std::string> read(const ProfileRow& row) override;
  void forget(const std::vector<std::string>&) override {}  // ON DELETE CASCADE

 private:
  ConnectionPool& pool_;
};

}  // namespace dormant::server::storage
