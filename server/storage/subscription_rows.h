// The subscriptions table and the hosts opted out of each. Callers hold the transaction.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// Selectors as JSON objects with snake_case members (target_entities as the protocol keeps
// them); members of other types and unknown ones are not read.
Selector selector_from_json(const nlohmann::json& item);
nlohmann::json selectors_to_json(const std::vector<Selector>& selectors);
Result<std::vector<Selector>> selectors_from_json(std::string_view text);

// Subscriptions' selectors as parsed, by subscription id: a subscription's selectors never change,
// and each heartbeat of its service would parse them again (100 subscriptions of 100 selectors
// took 90% of such a heartbeat). Holds at most kMaxEntries; past them it starts over.
class SelectorCache {
 public:
  static constexpr size_t kMaxEntries = 16384;
  std::shared_ptr<const std::vector<Selector>> find(const std::string& subscription_id) const;
  std::shared_ptr<const std::vector<Selector>> put(const std::string& subscription_id,
                                                   std::vector<Selector> selectors);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<Selector>>> parsed_;
};

// Each heartbeat of a service resolves its active subscriptions: a service has this many at most.
inline constexpr size_t kMaxActiveSubscriptions = 1000;
// Refused (kInvalidArgument) when the service has kMaxActiveSubscriptions already.
Result<void> insert_subscription(Database& db, const Subscription& subscription);
// Ends the active subscriptions of `service` that `spec` names (a service scope: all of them).
Result<void> end_subscriptions(Database& db, const std::string& service,
                               const SubscriptionSpec& spec, const std::string& request_id,
                               TimePoint now);
// Takes `hostnames` out of every active subscription of `service`.
Result<void> opt_out_of_subscriptions(Database& db, const std::string& service,
                                      const std::vector<std::string>& hostnames, TimePoint now);
// The active subscriptions of `service` that `hostname` is not opted out of, oldest first.
Result<std::vector<HostSubscription>> subscriptions_for_host(Database& db,
                                                             const std::string& service,
                                                             const std::string& hostname,
                                                             SelectorCache& cache);
// Every subscription, active first, newest first; with their opt-outs.
Result<std::vector<Subscription>> list_subscriptions(Database& db, int64_t limit, int64_t offset);

}  // namespace dormant::server::storage
