// Profiles waiting for upload, as files under --state-dir/spool (each its end time on a line,
// then its compressed body less the gpid): every profile goes through it,
// so neither a server outage nor an agent restart loses one. Bounded in bytes and in files: when
// a new profile would pass either limit, the oldest are dropped with a warning. The directory is
// listed once, at open; from then on an index in memory, ordered by age, says what waits, so a
// profile costs the same to add or deliver whether ten or thirty thousand wait. When the
// directory cannot be written (full, read-only), profiles are held in memory, within their own
// bound, and written out once it can be again. Profiles the server refuses for good go to
// spool/rejected/ (rejected_messages.h). Safe to use from several threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/rejected_messages.h"
#include "common/result.h"
#include "heartbeat/delivery_queues.h"

namespace dormant::agent {

class ProfileSpool final : public heartbeat::UploadQueue {
 public:
  static constexpr uint64_t kMaxHeldBytes = 16 << 20;
  static constexpr size_t kDefaultMaxFiles = 10'000;
  // Creates the directory when missing; indexes what an earlier run left.
  static Result<std::unique_ptr<ProfileSpool>> open(std::filesystem::path directory,
                                                    uint64_t max_bytes,
                                                    uint64_t max_held_bytes = kMaxHeldBytes,
                                                    size_t max_files = kDefaultMaxFiles);

  // Fails only for a profile that could never be kept (larger than the spool); one that cannot be
  // written is held in memory.
  Result<void> add(const wire::CompressedUpload& upload);
  // The oldest profile (its key is its file's name), or nothing. A file that cannot be read is
  // removed with an error logged.
  std::optional<heartbeat::QueuedUpload> oldest_upload() override;
  void remove_upload(const std::string& key) override;
  // Moves it to rejected/, with an error logged.
  void reject_upload(const std::string& key, const std::string& why) override;
  // Writes a command completion the server refused for good into rejected/, named in time with
  // the profiles there.
  void keep_rejected_completion(const std::string& command_id, const std::string& json);

  size_t files() const;  // on disk and held in memory
  uint64_t bytes() const;
  size_t held_files() const;
  uint64_t held_bytes() const;
  size_t rejected_files() const;
  // Why the last write failed, while writes fail; "" once one succeeds.
  std::string write_error() const;

 private:
  ProfileSpool(std::filesystem::path directory, uint64_t max_bytes, uint64_t max_held_bytes,
               size_t max_files)
      : directory_(std::move(directory)),
        max_bytes_(max_bytes),
        max_held_bytes_(max_held_bytes),
        max_files_(max_files),
        rejected_(directory_ / "rejected") {}
  void index_directory();  // once, at open
  // Drops the oldest file on disk, with a warning. mutex_ held.
  void drop_oldest();
  // Forgets `name` in the index. mutex_ held.
  void unindex(const std::string& name);
  // Writes `content` as `name`; on failure holds it in memory. mutex_ held.
  void write_or_hold(const std::string& name, std::string content);
  // Writes the held profiles out, oldest first, while writes succeed. mutex_ held.
  void write_held();
  // Removes the delivered profiles that could not be removed before. mutex_ held.
  void remove_delivered();
  // The next "<stamp>-<sequence>" in time order, never at or before the last one. mutex_ held.
  std::string next_name_stem();

  const std::filesystem::path directory_;
  const uint64_t max_bytes_;
  const uint64_t max_held_bytes_;
  const size_t max_files_;
  mutable std::mutex mutex_;
  // The profiles on disk that wait: file name (names sort oldest first) → size.
  std::map<std::string, uint64_t> index_;
  uint64_t bytes_ = 0;                       // of index_
  std::map<std::string, std::string> held_;  // file name → content, oldest first
  uint64_t held_bytes_ = 0;
  std::string write_error_;
  std::set<std::string> delivered_;  // delivered, but their files could not be removed yet
  RejectedMessages rejected_;
  uint64_t sequence_ = 0;
  int64_t last_stamp_ = 0;  // of the newest file: new names sort after it
};

}  // namespace dormant::agent
