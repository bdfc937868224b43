#include "server/control/retention.h"

#include <spdlog/spdlog.h>

namespace dormant::server::control {

using storage::Clock;
using storage::ExpiredRows;
using storage::Store;
using storage::TimePoint;

Retention::Retention(Store& store, RetentionPolicy policy, std::chrono::milliseconds period,
                     Clock clock)
    : store_(store), policy_(policy), period_(period), clock_(std::move(clock)) {
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

ExpiredRows Retention::sweep(int64_t* hosts) {
  ExpiredRows total;
  if (policy_.data.count() > 0) total = sweep_data();
  int64_t expired_hosts = policy_.hosts.count() > 0 ? sweep_hosts() : 0;
  if (hosts != nullptr) *hosts = expired_hosts;
  if (policy_.rollups) sweep_rollups();
  return total;
}

int64_t Retention::sweep_rollups() {
  int64_t total = 0;
  for (;;) {
    auto expired = store_.expire_rollups(kBatch);
    if (!expired) {
      spdlog::warn("retention: {}; trying again at the next sweep", expired.error().message());
      break;
    }
    total += *expired;
    if (*expired == 0 || stopping_for(kPauseBetweenBatches)) break;
  }
  if (total > 0) spdlog::info("retention: deleted {} rollup row(s) past their retention", total);
  return total;
}

ExpiredRows Retention::sweep_data() {
  TimePoint cutoff = clock_() - policy_.data;
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
    total.args += expired->args;
    bool more = expired->profiles == kBatch || expired->commands == kBatch ||
                expired->requests == kBatch || expired->args == kBatch;
    if (!more || stopping_for(kPauseBetweenBatches)) break;
  }
  if (total.profiles + total.commands + total.requests > 0) {
    spdlog::info(
        "retention: deleted {} profile(s), {} replaced command(s), {} request(s) older "
        "than {} day(s)",
        total.profiles, total.commands, total.requests, policy_.data.count() / 24);
  }
  return total;
}

int64_t Retention::sweep_hosts() {
  TimePoint cutoff = clock_() - policy_.hosts;
  int64_t total = 0;
  for (;;) {
    auto expired = store_.expire_hosts_before(cutoff, kBatch);
    if (!expired) {
      spdlog::warn("retention: {}; trying again at the next sweep", expired.error().message());
      break;
    }
    total += *expired;
    if (*expired < kBatch || stopping_for(kPauseBetweenBatches)) break;
  }
  if (total > 0) {
    spdlog::info("retention: deleted {} host(s) not heard from for {} day(s)", total,
                 policy_.hosts.count() / 24);
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

}  // namespace dormant::server::control
