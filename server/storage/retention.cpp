#include "server/storage/retention.h"

#include <spdlog/spdlog.h>

namespace dormant::server::storage {

Retention::Retention(Store& store, std::chrono::hours keep, std::chrono::milliseconds period,
                     Clock clock)
    : store_(store), keep_(keep), period_(period), clock_(std::move(clock)) {
  thread_ = std::thread([this] { run(); });
}

Retention::~Retention() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool Retention::stopping_for(std::chrono::milliseconds pause) {
  std::unique_lock lock(mutex_);
  return wake_.wait_for(lock, pause, [this] { return stop_; });
}

uint64_t Retention::sweeps() const {
  std::lock_guard lock(mutex_);
  return sweeps_;
}

ExpiredRows Retention::sweep() {
  TimePoint cutoff = clock_() - keep_;
  ExpiredRows total;
  for (;;) {
    auto expired = store_.expire_before(cutoff, kBatch);
    if (!expired) {
      spdlog::warn("retention: {}; trying again at the next sweep", expired.error().message());
      break;
    }
    total.profiles += expired->profiles;
    total.commands += expired->commands;
    total.requests += expired->requests;
    bool more =
        expired->profiles == kBatch || expired->commands == kBatch || expired->requests == kBatch;
    if (!more || stopping_for(kPauseBetweenBatches)) break;
  }
  if (total.profiles + total.commands + total.requests > 0) {
    spdlog::info(
        "retention: deleted {} profile(s), {} replaced command(s), {} request(s) older "
        "than {} day(s)",
        total.profiles, total.commands, total.requests, keep_.count() / 24);
  }
  return total;
}

void Retention::run() {
  do {
    sweep();
    std::lock_guard lock(mutex_);
    ++sweeps_;
  } while (!stopping_for(period_));
}

}  // namespace dormant::server::storage
