// What the rollups need besides uploads, in the background: profiles stored before rollups
// existed (a server upgraded from an older schema) are added to them, oldest first, a batch at a
// time, so that views of their time show them (each is read, parsed and rolled up as an upload
// is; one whose text is gone or unreadable is marked done with nothing added, and logged); then,
// every minute, the hours and days that are over are compacted from their minutes and hours.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "common/result.h"
#include "server/storage/store.h"

namespace dormant::server::api {

// Rolls up what the rollups lack now, until none is left or `stop` says so; returns how many
// profiles were added.
Result<int64_t> roll_up_stored_profiles(storage::Store& store,
                                        const std::function<bool()>& stop = {});

class RollupUpkeep {
 public:
  // Starts at once; compacts every `period`; after an error (the database away) tries again
  // `period` later.
  explicit RollupUpkeep(storage::Store& store,
                        std::chrono::milliseconds period = std::chrono::minutes(1));
  RollupUpkeep(const RollupUpkeep&) = delete;
  RollupUpkeep& operator=(const RollupUpkeep&) = delete;
  // Stops within a profile or a bucket.
  ~RollupUpkeep();

 private:
  void run();
  bool stopping();

  storage::Store& store_;
  const std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dormant::server::api
