#include "server/storage/subscription_rows.h"

#include <utility>

#include "server/storage/json_columns.h"

namespace dormant::server::storage {
namespace {

using TextMember = std::optional<std::string> Selector::*;
constexpr std::pair<const char*, TextMember> kSelectorTexts[] = {
    {"service_name", &Selector::service_name},   {"hostname", &Selector::hostname},
    {"ip_address", &Selector::ip_address},       {"namespace", &Selector::pod_namespace},
    {"workload_name", &Selector::workload_name}, {"workload_kind", &Selector::workload_kind},
    {"pod_name", &Selector::pod_name},           {"container_name", &Selector::container_name},
    {"process_name", &Selector::process_name}};

constexpr std::string_view kColumns = R"sql(
SELECT s.subscription_id, s.request_id, s.service_name, s.target_scope, s.target_entities,
       s.created_ms, s.ended_ms, s.ended_by
FROM subscriptions s
)sql";

Result<std::vector<Subscription>> read_all(Statement& select) {
  std::vector<Subscription> found;
  for (;;) {
    auto row = select.step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    Subscription subscription;
    subscription.subscription_id = select.text(0);
    subscription.request_id = select.text(1);
    subscription.service_name = select.text(2);
    auto scope = parse_target_scope(select.text(3));
    if (!scope) return Error::parse("column subscriptions.target_scope holds " + select.text(3));
    subscription.spec.scope = *scope;
    auto selectors = selectors_from_json(select.text(4));
    if (!selectors) return std::move(selectors).take_error();
    subscription.spec.selectors = std::move(*selectors);
    subscription.created_at = from_unix_ms(select.int64(5));
    if (auto ended = select.optional_int64(6)) subscription.ended_at = from_unix_ms(*ended);
    subscription.ended_by = select.optional_text(7);
    found.push_back(std::move(subscription));
  }
  return found;
}

}  // namespace

std::shared_ptr<const std::vector<Selector>> SelectorCache::find(
    const std::string& subscription_id) const {
  std::lock_guard lock(mutex_);
  auto found = parsed_.find(subscription_id);
  return found == parsed_.end() ? nullptr : found->second;
}

std::shared_ptr<const std::vector<Selector>> SelectorCache::put(const std::string& subscription_id,
                                                                std::vector<Selector> selectors) {
  auto parsed = std::make_shared<const std::vector<Selector>>(std::move(selectors));
  std::lock_guard lock(mutex_);
  if (parsed_.size() >= kMaxEntries) parsed_.clear();
  parsed_[subscription_id] = parsed;
  return parsed;
}

Selector selector_from_json(const nlohmann::json& item) {
  Selector selector;
  for (const auto& [key, member] : kSelectorTexts) {
    if (auto value = item.find(key); value != item.end() && value->is_string()) {
      selector.*member = value->get<std::string>();
    }
  }
  if (auto pid = item.find("pid"); pid != item.end() && pid->is_number_integer()) {
    selector.pid = pid->get<int64_t>();
  }
  return selector;
}

nlohmann::json selectors_to_json(const std::vector<Selector>& selectors) {
  nlohmann::json list = nlohmann::json::array();
  for (const Selector& selector : selectors) {
    nlohmann::json item = nlohmann::json::object();
    for (const auto& [key, member] : kSelectorTexts) {
      if (selector.*member) item[key] = *(selector.*member);
    }
    if (selector.pid) item["pid"] = *selector.pid;
    list.push_back(std::move(item));
  }
  return list;
}

Result<std::vector<Selector>> selectors_from_json(std::string_view text) {
  auto list = parse_json_column(text, "subscriptions.target_entities");
  if (!list) return std::move(list).take_error();
  if (!list->is_array()) return Error::parse("subscriptions.target_entities is not a list");
  std::vector<Selector> selectors;
  for (const nlohmann::json& item : *list) {
    if (!item.is_object()) return Error::parse("subscriptions.target_entities holds a non-object");
    selectors.push_back(selector_from_json(item));
  }
  return selectors;
}

Result<void> insert_subscription(Database& db, const Subscription& subscription) {
  auto count =
      db.prepare("SELECT COUNT(*) FROM subscriptions WHERE service_name = ?1 AND ended_ms IS NULL");
  if (!count) return std::move(count).take_error();
  count->bind_all(subscription.service_name);
  auto row = count->step();
  if (!row) return std::move(row).take_error();
  if (*row && count->int64(0) >= static_cast<int64_t>(kMaxActiveSubscriptions)) {
    return Error::invalid_argument(
        "service " + subscription.service_name + " has " + std::to_string(kMaxActiveSubscriptions) +
        " active subscriptions, the most it may have: stop one before subscribing again");
  }
  count->reset();
  auto insert = db.prepare(R"sql(
INSERT INTO subscriptions (subscription_id, request_id, service_name, target_scope,
                           target_entities, created_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6))sql");
  if (!insert) return std::move(insert).take_error();
  return insert
      ->bind_all(subscription.subscription_id, subscription.request_id, subscription.service_name,
                 std::string(to_string(subscription.spec.scope)),
                 json_text(selectors_to_json(subscription.spec.selectors)),
                 to_unix_ms(subscription.created_at))
      .run();
}

Result<void> end_subscriptions(Database& db, const std::string& service,
                               const SubscriptionSpec& spec, const std::string& request_id,
                               TimePoint now) {
  bool all = spec.scope == TargetScope::kService;
  auto end = db.prepare(R"sql(
UPDATE subscriptions SET ended_ms = ?2, ended_by = ?3
WHERE service_name = ?1 AND ended_ms IS NULL
  AND (?4 = 1 OR (target_scope = ?5 AND target_entities = ?6)))sql");
  if (!end) return std::move(end).take_error();
  return end
      ->bind_all(service, to_unix_ms(now), request_id, all, std::string(to_string(spec.scope)),
                 json_text(selectors_to_json(spec.selectors)))
      .run();
}

Result<void> opt_out_of_subscriptions(Database& db, const std::string& service,
                                      const std::vector<std::string>& hostnames, TimePoint now) {
  auto opt_out = db.prepare(R"sql(
INSERT INTO subscription_opt_outs (subscription_id, hostname, created_ms)
SELECT subscription_id, ?2, ?3 FROM subscriptions WHERE service_name = ?1 AND ended_ms IS NULL
ON CONFLICT (subscription_id, hostname) DO NOTHING)sql");
  if (!opt_out) return std::move(opt_out).take_error();
  for (const std::string& hostname : hostnames) {
    if (auto done = opt_out->bind_all(service, hostname, to_unix_ms(now)).run(); !done) {
      return done;
    }
  }
  return ok();
}

Result<std::vector<HostSubscription>> subscriptions_for_host(Database& db,
                                                             const std::string& service,
                                                             const std::string& hostname,
                                                             SelectorCache& cache) {
  auto select = db.prepare(R"sql(
SELECT s.subscription_id, s.request_id, s.target_scope, s.created_ms, s.target_entities
FROM subscriptions s
WHERE s.service_name = ?1 AND s.ended_ms IS NULL
  AND NOT EXISTS (SELECT 1 FROM subscription_opt_outs o
                  WHERE o.subscription_id = s.subscription_id AND o.hostname = ?2)
ORDER BY s.created_ms, s.subscription_id)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(service, hostname);
  std::vector<HostSubscription> found;
  for (;;) {
    auto row = select->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    HostSubscription subscription;
    std::string id = select->text(0);
    subscription.request_id = select->text(1);
    auto scope = parse_target_scope(select->text(2));
    if (!scope) return Error::parse("column subscriptions.target_scope holds " + select->text(2));
    subscription.scope = *scope;
    subscription.created_at = from_unix_ms(select->int64(3));
    // Parsed once: a subscription's selectors never change.
    subscription.selectors = cache.find(id);
    if (!subscription.selectors) {
      auto selectors = selectors_from_json(select->text(4));
      if (!selectors) return std::move(selectors).take_error();
      subscription.selectors = cache.put(id, std::move(*selectors));
    }
    found.push_back(std::move(subscription));
  }
  return found;
}

Result<std::vector<Subscription>> list_subscriptions(Database& db, int64_t limit, int64_t offset) {
  auto select = db.prepare(std::string(kColumns) + R"sql(
ORDER BY (s.ended_ms IS NULL) DESC, s.created_ms DESC, s.subscription_id LIMIT ?1 OFFSET ?2)sql");
  if (!select) return std::move(select).take_error();
  select->bind_all(sql_limit(limit), offset);
  auto subscriptions = read_all(*select);
  if (!subscriptions) return subscriptions;
  auto opted = db.prepare(
      "SELECT hostname FROM subscription_opt_outs WHERE subscription_id = ?1 ORDER BY hostname");
  if (!opted) return std::move(opted).take_error();
  for (Subscription& subscription : *subscriptions) {
    opted->bind_all(subscription.subscription_id);
    for (;;) {
      auto row = opted->step();
      if (!row) return std::move(row).take_error();
      if (!*row) break;
      subscription.opted_out.push_back(opted->text(0));
    }
    opted->reset();
  }
  return subscriptions;
}

}  // namespace dormant::server::storage
