// Uploaded profiles on disk: one gzip file per profile in the data directory's profiles/ folder.
//
// Files rather than BLOBs: the database stays small (the hot path is heartbeats, a few hundred
// bytes each), so its WAL, checkpoints and backups stay cheap while profiles run to megabytes; a
// stored file is plain gzip that zcat reads and a download can serve as it is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "common/result.h"

namespace dormant::server::storage {

class ProfileFiles {
 public:
  explicit ProfileFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}

  struct Written {
    std::string file_name;  // relative to the folder
    int64_t compressed_size = 0;
  };

  // Compresses `collapsed` into a new file, fsynced together with the folder before it returns.
  // A failure (ENOSPC, EROFS...) leaves no file behind, whole or partial.
  Result<Written> write(std::string_view collapsed) const;
  Result<std::string> read(const std::string& file_name, int64_t raw_size) const;
  void remove(const std::string& file_name) const;
  // Removes the profile files that `referenced` does not name and temporary files: what a crash
  // between writing a file and committing its row leaves. Returns how many it removed.
  Result<int> remove_unreferenced(const std::set<std::string>& referenced) const;

  std::filesystem::path path_of(const std::string& file_name) const { return dir_ / file_name; }

 private:
  std::filesystem::path dir_;
};

}  // namespace dormant::server::storage
