#include "server/api/rollup_backfill.h"

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

RollupBackfill::RollupBackfill(storage::Store& store, std::chrono::milliseconds retry)
    : store_(store), retry_(retry) {
  thread_ = std::thread([this] { run(); });
}

RollupBackfill::~RollupBackfill() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool RollupBackfill::stopping() {
  std::lock_guard lock(mutex_);
  return stop_;
}

void RollupBackfill::run() {
  for (;;) {
    auto added = roll_up_stored_profiles(store_, [this] { return stopping(); });
    if (added && *added > 0) {
      spdlog::info("rollups: {} profile(s) stored before them added", *added);
    }
    if (added) return;
    spdlog::warn("rollups: adding the profiles stored before them: {}; trying again in {} s",
                 added.error().message(), retry_.count() / 1000);
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, retry_, [this] { return stop_; })) return;
  }
}

}  // namespace dormant::server::api
