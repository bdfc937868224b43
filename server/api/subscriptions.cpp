// GET /api/subscriptions: each subscription, and what it covers now.
#include "heartbeat/protocol/profiling_request.h"
#include "server/api/api.h"
#include "server/api/api_requests.h"
#include "server/api/listing_writer.h"
#include "server/api/wire_mapping.h"
#include "server/storage/subscription_rows.h"

namespace dormant::server::api {

http::Response Api::list_subscriptions(const Call& call) {
  auto limit = integer_parameter(call, "limit", 1000, 1, 10'000);
  if (!limit) return invalid_request(limit.error(), "query");
  auto offset = integer_parameter(call, "after", 0, 0, 10'000'000);
  if (!offset) return invalid_request(offset.error(), "query");
  auto subscriptions = store_.list_subscriptions(*limit, *offset);
  if (!subscriptions) return store_failure(subscriptions.error());
  ListingWriter page("subscriptions");
  std::optional<std::string> next;
  for (const storage::Subscription& subscription : *subscriptions) {
    nlohmann::json covers = nullptr;
    if (!subscription.ended_at) {
      storage::TargetQuery query{subscription.service_name, subscription.spec.scope,
                                 subscription.spec.selectors, options_.active_window};
      auto targets = store_.resolve_targets(query);
      if (!targets) return store_failure(targets.error());
      nlohmann::json hosts = nlohmann::json::object();
      size_t processes = 0;
      for (const auto& [hostname, pids] : *targets) {
        if (std::binary_search(subscription.opted_out.begin(), subscription.opted_out.end(),
                               hostname)) {
          continue;
        }
        hosts[hostname] = pids ? nlohmann::json(*pids) : nlohmann::json(nullptr);
        processes += pids ? pids->size() : 0;
      }
      covers = {{"host_count", hosts.size()}, {"pid_count", processes}, {"hosts", hosts}};
    }
    nlohmann::json item = {
        {"subscription_id", subscription.subscription_id},
        {"service_name", subscription.service_name},
        {"target_scope", storage::to_string(subscription.spec.scope)},
        {"target_entities", heartbeat::entities_in_camel_case(
                                storage::selectors_to_json(subscription.spec.selectors))},
        {"request_id", subscription.request_id},
        {"active", !subscription.ended_at},
        {"created_at", iso_time(subscription.created_at)},
        {"ended_at", subscription.ended_at ? nlohmann::json(iso_time(*subscription.ended_at))
                                           : nlohmann::json(nullptr)},
        {"ended_by",
         subscription.ended_by ? nlohmann::json(*subscription.ended_by) : nlohmann::json(nullptr)},
        {"opted_out_hosts", subscription.opted_out},
        {"covers", std::move(covers)}};
    if (!page.add(item)) break;
  }
  // Past the page's bytes, or as many as asked for: the next page starts after them. The
  // subscriptions are listed in an order that only their ends change, an offset at most.
  if (page.items() < subscriptions->size() ||
      subscriptions->size() == static_cast<size_t>(*limit)) {
    next = std::to_string(*offset + static_cast<int64_t>(page.items()));
  }
  return json_text_ok(page.finish(next));
}

}  // namespace dormant::server::api
