// Profiles stored before rollups existed (a server upgraded from an older schema) are added to
// them in the background, oldest first, a batch at a time, so that views of their time show
// them. Each is read, parsed and rolled up as an upload is; one whose text is gone or unreadable
// is marked done with nothing added, and logged.
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

class RollupBackfill {
 public:
  // Starts at once; after an error (the database away) tries again `retry` later.
  explicit RollupBackfill(storage::Store& store,
                          std::chrono::milliseconds retry = std::chrono::minutes(1));
  RollupBackfill(const RollupBackfill&) = delete;
  RollupBackfill& operator=(const RollupBackfill&) = delete;
  // Stops within a profile.
  ~RollupBackfill();

 private:
  void run();
  bool stopping();

  storage::Store& store_;
  const std::chrono::milliseconds retry_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dormant::server::api
