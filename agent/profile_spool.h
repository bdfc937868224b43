// Profiles waiting for upload, as files under --state-dir/spool (each its end time on a line,
// then its compressed body less the gpid): every profile goes through it,
// so neither a server outage nor an agent restart loses one. Bounded: when a new profile would
// pass the limit, the oldest are dropped with a warning. Safe to use from several threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "heartbeat/delivery_queues.h"

namespace dormant::agent {

class ProfileSpool final : public heartbeat::UploadQueue {
 public:
  // Creates the directory when missing; counts what an earlier run left.
  static Result<std::unique_ptr<ProfileSpool>> open(std::filesystem::path directory,
                                                    uint64_t max_bytes);

  Result<void> add(const heartbeat::CompressedUpload& upload);
  // The oldest profile (its key is its file's name), or nothing. A file that cannot be read is
  // removed with an error logged.
  std::optional<heartbeat::QueuedUpload> oldest_upload() override;
  void remove_upload(const std::string& key) override;

  size_t files() const;
  uint64_t bytes() const;

 private:
  ProfileSpool(std::filesystem::path directory, uint64_t max_bytes)
      : directory_(std::move(directory)), max_bytes_(max_bytes) {}
  std::vector<std::filesystem::path> sorted_files() const;  // oldest first; mutex_ held
  void recount();                                           // mutex_ held

  const std::filesystem::path directory_;
  const uint64_t max_bytes_;
  mutable std::mutex mutex_;
  uint64_t sequence_ = 0;
  int64_t last_stamp_ = 0;  // of the newest file: new names sort after it
  size_t files_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace dormant::agent
