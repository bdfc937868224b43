// --retention-days: a thread that deletes, every `period`, the profiles and command history older
// than the retention, in batches of kBatch rows with a pause between them, so that heartbeats
// never queue behind it. Current commands, hosts and requests still carried out stay.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/storage/store.h"

namespace dormant::server::storage {

class Retention {
 public:
  static constexpr int64_t kBatch = 500;
  static constexpr std::chrono::milliseconds kPauseBetweenBatches{100};

  // The first sweep runs at once.
  Retention(Store& store, std::chrono::hours keep, std::chrono::milliseconds period, Clock clock);
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;
  // Stops the thread, within a batch.
  ~Retention();

  // Deletes what is older than the retention now, batch after batch until none is left; stops
  // early on shutdown or on an error (logged; the next sweep tries again).
  ExpiredRows sweep();
  // Sweeps done so far, for tests.
  uint64_t sweeps() const;

 private:
  void run();
  bool stopping_for(std::chrono::milliseconds pause);

  Store& store_;
  const std::chrono::hours keep_;
  const std::chrono::milliseconds period_;
  const Clock clock_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  uint64_t sweeps_ = 0;
  std::thread thread_;
};

}  // namespace dormant::server::storage
