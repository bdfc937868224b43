// The layout of the server's data directory, and the lock that keeps a second server out of it.
#pragma once

#include <filesystem>

#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant::server::storage {

class DataDir {
 public:
  // Creates the directory (mode 0700) and its profiles/ folder when missing, and takes an
  // exclusive lock on it that lasts as long as the DataDir (and dies with the process).
  static Result<DataDir> open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path database_file() const { return root_ / "dormant.db"; }
  std::filesystem::path profiles_dir() const { return root_ / "profiles"; }

 private:
  DataDir(std::filesystem::path root, UniqueFd lock)
      : root_(std::move(root)), lock_(std::move(lock)) {}

  std::filesystem::path root_;
  UniqueFd lock_;
};

}  // namespace dormant::server::storage
