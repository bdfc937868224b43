// --retention-days, --host-expiry-days and the rollups' own: a thread that deletes, every
// `period`, the profiles and command history older than the retention, the hosts not heard from
// for longer than their expiry and the rollup buckets past theirs, in batches of kBatch rows with a
// pause between them, so that heartbeats never queue behind it. Current commands and requests still
// carried out stay.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/storage/store.h"

namespace dormant::server::control {

// How long things are kept; zero: for ever.
struct RetentionPolicy {
  std::chrono::hours data{0};   // profiles, command history, requests
  std::chrono::hours hosts{0};  // since a host's last heartbeat
  bool rollups = false;         // the store's rollup buckets, by their own retention
};

class Retention {
 public:
  static constexpr int64_t kBatch = 500;
  static constexpr std::chrono::milliseconds kPauseBetweenBatches{100};

  // The first sweep runs at once.
  Retention(storage::Store& store, RetentionPolicy policy, std::chrono::milliseconds period,
            storage::Clock clock);
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;
  // Stops the thread, within a batch.
  ~Retention();

  // Deletes what is older than the retention now, batch after batch until none is left; stops
  // early on shutdown or on an error (logged; the next sweep tries again). Returns the hosts
  // deleted apart.
  storage::ExpiredRows sweep(int64_t* hosts = nullptr);
  // Sweeps done so far, for tests.
  uint64_t sweeps() const;

 private:
  void run();
  storage::ExpiredRows sweep_data();
  int64_t sweep_hosts();
  int64_t sweep_rollups();
  bool stopping_for(std::chrono::milliseconds pause);

  storage::Store& store_;
  const RetentionPolicy policy_;
  const std::chrono::milliseconds period_;
  const storage::Clock clock_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  uint64_t sweeps_ = 0;
  std::thread thread_;
};

}  // namespace dormant::server::control
