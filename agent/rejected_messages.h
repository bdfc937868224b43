// Profiles and command completions the server refused for good (400, 413, 415, 422), kept under
// spool/rejected/ for a person to look at instead of being deleted, within a cap on files and
// bytes: past it the oldest go. Not thread-safe: the spool calls it under its own lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace dormant::agent {

class RejectedMessages {
 public:
  static constexpr size_t kMaxFiles = 100;
  static constexpr uint64_t kMaxBytes = 16 << 20;

  // Nothing is created until a message is rejected; what an earlier run kept is counted.
  explicit RejectedMessages(std::filesystem::path directory, size_t max_files = kMaxFiles,
                            uint64_t max_bytes = kMaxBytes);

  // Moves the spool file `from` in, under its own name.
  void keep_file(const std::filesystem::path& from, uint64_t size);
  // Writes `content` in as `name` (a profile held in memory, a completion).
  void keep_content(const std::string& name, const std::string& content);

  size_t files() const { return index_.size(); }
  uint64_t bytes() const { return bytes_; }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  bool make_directory();
  // Drops the oldest until `incoming` more bytes and one more file fit.
  void make_room(uint64_t incoming);

  const std::filesystem::path directory_;
  const size_t max_files_;
  const uint64_t max_bytes_;
  std::map<std::string, uint64_t> index_;  // file name (oldest first) → size
  uint64_t bytes_ = 0;
};

}  // namespace dormant::agent
