#include "server/api/rollup_upkeep.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "profile/collapsed.h"
#include "server/api/profile_rollup.h"

namespace dormant::server::api {
namespace {

constexpr int64_t kBatch = 64;

}  // namespace

Result<int64_t> roll_up_stored_profiles(storage::Store& store, const std::function<bool()>& stop) {
  int64_t added = 0;
  for (;;) {
    auto gpids = store.profiles_not_rolled_up(kBatch);
    if (!gpids) return std::move(gpids).take_error();
    if (gpids->empty()) return added;
    for (int64_t gpid : *gpids) {
      if (stop && stop()) return added;
      std::optional<storage::ProfileRollup> rollup;
      std::string instance_type;
      auto stored = store.get_profile(gpid);
      if (!stored && stored.error().kind() == ErrorKind::kNotFound) continue;  // deleted since
      if (!stored) return std::move(stored).take_error();
      auto text = store.read_profile(gpid);
      auto parsed = text ? profile::read_collapsed(*text)
                         : Result<profile::CollapsedProfile>(std::move(text).take_error());
      if (parsed) {
        instance_type = instance_type_of(parsed->header);
        rollup = rollup_of(*parsed, stored->hostname, instance_type);
      } else if (parsed.error().kind() == ErrorKind::kUnavailable) {
        return std::move(parsed).take_error();
      } else {
        spdlog::warn("rollups: profile {} is left out of them: {}", gpid, parsed.error().message());
      }
      auto done = store.add_to_rollups(gpid, rollup ? &*rollup : nullptr, instance_type);
      if (!done) return std::move(done).take_error();
      added += *done ? 1 : 0;
    }
  }
}

RollupUpkeep::RollupUpkeep(storage::Store& store, std::chrono::milliseconds period)
    : store_(store), period_(period) {
  thread_ = std::thread([this] { run(); });
}

RollupUpkeep::~RollupUpkeep() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool RollupUpkeep::stopping() {
  std::lock_guard lock(mutex_);
  return stop_;
}

void RollupUpkeep::run() {
  bool backfilled = false;
  for (;;) {
    if (!backfilled) {
      auto added = roll_up_stored_profiles(store_, [this] { return stopping(); });
      if (added && *added > 0) {
        spdlog::info("rollups: {} profile(s) stored before them added", *added);
      }
      if (!added) {
        spdlog::warn("rollups: adding the profiles stored before them: {}; trying again in {} s",
                     added.error().message(), period_.count() / 1000);
      }
      backfilled = added.ok();
    }
    if (backfilled) {
      // A bucket at a time, so that a stop is not kept waiting for a backlog.
      while (!stopping()) {
        auto compacted = store_.compact_rollups(1);
        if (!compacted) {
          spdlog::warn("rollups: {}; trying again in {} s", compacted.error().message(),
                       period_.count() / 1000);
        }
        if (!compacted || *compacted == 0) break;
      }
    }
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, period_, [this] { return stop_; })) return;
  }
}
}  // namespace dormant::server::api
