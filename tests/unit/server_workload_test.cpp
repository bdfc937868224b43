// The store's side of workload-level profiling: each host's inventory kept as rows, rewritten only
// when it changes, and selectors resolved against the inventories of active hosts. On SQLite and
// on PostgreSQL.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store_test_fixture.h"

#include "server/control/selector_resolver.h"
#include "server/storage/inventory_rows.h"
#include "server/storage/subscription_rows.h"

namespace dormant::server::storage {
namespace {

using TextMember = std::optional<std::string> Selector::*;
Selector sel(std::initializer_list<std::pair<TextMember, std::string>> texts,
             std::optional<int64_t> pid = std::nullopt) {
  Selector selector;
  for (const auto& [member, value] : texts) selector.*member = value;
  selector.pid = pid;
  return selector;
}
Selector with_pid(int64_t pid) { return sel({}, pid); }

class WorkloadStoreTest : public StoreTest {
 protected:
  static HostContainer container(std::string name, std::optional<std::string> pod_namespace,
                                 std::optional<std::string> pod,
                                 std::optional<std::string> workload,
                                 std::vector<HostProcess> processes) {
    HostContainer c;
    c.container_id = name + "-id";
    c.container_name = std::move(name);
    c.runtime = "containerd";
    c.pod_namespace = std::move(pod_namespace);
    c.pod_name = std::move(pod);
    c.workload_name = std::move(workload);
    c.processes = std::move(processes);
    return c;
  }

  void beat_with(const std::string& hostname, std::vector<HostContainer> containers,
                 const std::string& service = "web") {
    HostHeartbeat beat = heartbeat(hostname, service);
    beat.containers = std::move(containers);
    auto answer = commands_->record_heartbeat(beat);
    ASSERT_TRUE(answer.ok()) << answer.error().message();
  }

  // "host/position/name" of each container of a snapshot of every service, in its order.
  std::vector<std::string> snapshot_containers() {
    auto snapshot = store_->workload_snapshot(SnapshotQuery{});
    EXPECT_TRUE(snapshot.ok()) << snapshot.error().message();
    if (!snapshot.ok()) return {};
    std::vector<std::string> listed;
    for (const ActiveContainer& c : snapshot->containers) {
      listed.push_back(snapshot->hosts[c.host].hostname + "/" + std::to_string(c.position) + "/" +
                       c.container.container_name);
    }
    return listed;
  }

  TargetHosts resolve(TargetScope scope, std::vector<Selector> selectors,
                      const std::string& service = "web") {
    TargetQuery query;
    query.service_name = service;
    query.scope = scope;
    query.selectors = std::move(selectors);
    query.active_window = std::chrono::minutes(2);
    auto targets = store_->resolve_targets(query);
    EXPECT_TRUE(targets.ok()) << targets.error().message();
    return targets.ok() ? *targets : TargetHosts{};
  }

  // Two hosts of "web": a checkout pod of two containers on web-1, a cart pod on web-2; one
  // host of "db".
  void fleet() {
    beat_with(
        "web-1",
        {container("app", "shop", "checkout-7f8d9cb4d-x2m9q", "checkout",
                   {{100, "java"}, {101, "jcmd"}}),
         container("sidecar", "shop", "checkout-7f8d9cb4d-x2m9q", "checkout", {{102, "envoy"}}),
         container("agent", std::nullopt, std::nullopt, std::nullopt, {{103, "dormant"}})});
    beat_with("web-2", {container("app", "shop", "cart-0", "cart", {{200, "java"}}),
                        container("app", "ops", "cart-0", "cart", {{201, "python3"}})});
    beat_with("db-1", {container("pg", "shop", "pg-0", "pg", {{300, "postgres"}})}, "db");
  }
};

INSTANTIATE_TEST_SUITE_P(Stores, WorkloadStoreTest,
                         ::testing::Values(Dialect::kSqlite, Dialect::kPostgres), store_name);

TEST_P(WorkloadStoreTest, TheInventoryIsKeptAsRowsAndRewrittenOnlyWhenItChanges) {
  fleet();
  auto db = open_database();
  auto stored = read_inventory(*db, "web-1", "web");
  ASSERT_TRUE(stored.ok()) << stored.error().message();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0].processes, (std::vector<HostProcess>{{100, "java"}, {101, "jcmd"}}));
  EXPECT_EQ((*stored)[1].pod_name, "checkout-7f8d9cb4d-x2m9q");
  EXPECT_EQ(column("SELECT inventory_processes FROM hosts WHERE hostname = 'web-1'"), "4");

  // A marker written behind the store's back goes with the next rewrite, and stays while the
  // same inventory comes again: nothing was written.
  ASSERT_TRUE(
      db->execute("UPDATE host_processes SET process_name = 'marked' WHERE pid = 100").ok());
  beat("web-1");  // a heartbeat without containers empties the inventory
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes WHERE hostname = 'web-1'"), "0");
  fleet();
  EXPECT_EQ(column("SELECT process_name FROM host_processes WHERE pid = 100"), "java");
  ASSERT_TRUE(
      db->execute("UPDATE host_processes SET process_name = 'marked' WHERE pid = 100").ok());
  fleet();
  EXPECT_EQ(column("SELECT process_name FROM host_processes WHERE pid = 100"), "marked")
      << "an unchanged inventory was written again";
}

// A heartbeat may carry, in place of its list, the digest an earlier answer gave for it: the
// inventory stored stays, and the answer confirms the digest only when it is the stored one's.
TEST_P(WorkloadStoreTest, ADigestInPlaceOfTheListKeepsTheInventory) {
  HostHeartbeat full = heartbeat("web-1", "web");
  full.containers = {container("app", "shop", "checkout-0", "checkout", {{100, "java"}})};
  auto first = commands_->record_heartbeat(full);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(first->containers_digest);
  auto again = commands_->record_heartbeat(full);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->containers_digest, first->containers_digest) << "the same list, the same digest";

  HostHeartbeat by_digest = heartbeat("web-1", "web");
  by_digest.containers_digest = first->containers_digest;
  auto confirmed = commands_->record_heartbeat(by_digest);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_EQ(confirmed->containers_digest, first->containers_digest);
  EXPECT_EQ(column("SELECT pid FROM host_processes WHERE hostname = 'web-1'"), "100");

  // Another digest (another server's, a list the server never stored): no confirmation, and the
  // inventory stays until the list comes again.
  by_digest.containers_digest = std::string(64, '0');
  auto refused = commands_->record_heartbeat(by_digest);
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->containers_digest);
  EXPECT_EQ(column("SELECT pid FROM host_processes WHERE hostname = 'web-1'"), "100");

  // Another list: another digest, and the old one no longer confirmed.
  full.containers[0].processes.push_back({101, "jcmd"});
  auto changed = commands_->record_heartbeat(full);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->containers_digest);
  EXPECT_NE(changed->containers_digest, first->containers_digest);
  by_digest.containers_digest = first->containers_digest;
  auto stale = commands_->record_heartbeat(by_digest);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->containers_digest);
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes WHERE hostname = 'web-1'"), "2");
}

TEST_P(WorkloadStoreTest, APidListedTwiceOnAHostIsKeptOnce) {
  beat_with("web-1", {container("a", "ns", "p", "w", {{7, "x"}, {7, "y"}}),
                      container("b", "ns", "p", "w", {{7, "z"}, {8, "w"}})});
  EXPECT_EQ(column("SELECT pid || ':' || process_name FROM host_processes ORDER BY pid"),
            "7:x,8:w");
}

TEST_P(WorkloadStoreTest, EachScopeResolvesToHostsAndPids) {
  fleet();
  EXPECT_EQ(resolve(TargetScope::kService, {}),
            (TargetHosts{{"web-1", std::nullopt}, {"web-2", std::nullopt}}));
  EXPECT_EQ(resolve(TargetScope::kHost, {sel({{&Selector::hostname, "web-2"}})}),
            (TargetHosts{{"web-2", std::nullopt}}));
  EXPECT_EQ(resolve(TargetScope::kNamespace, {sel({{&Selector::pod_namespace, "shop"}})}),
            (TargetHosts{{"web-1", PidList{100, 101, 102}}, {"web-2", PidList{200}}}));
  EXPECT_EQ(resolve(TargetScope::kWorkload, {sel({{&Selector::workload_name, "cart"}})}),
            (TargetHosts{{"web-2", PidList{200, 201}}}));
  EXPECT_EQ(resolve(TargetScope::kWorkload,
                    {sel({{&Selector::pod_namespace, "ops"}, {&Selector::workload_name, "cart"}})}),
            (TargetHosts{{"web-2", PidList{201}}}));
  // A pod: every process of every container in it.
  EXPECT_EQ(resolve(TargetScope::kPod, {sel({{&Selector::pod_name, "checkout-7f8d9cb4d-x2m9q"}})}),
            (TargetHosts{{"web-1", PidList{100, 101, 102}}}));
  EXPECT_EQ(
      resolve(TargetScope::kContainer, {sel({{&Selector::pod_name, "checkout-7f8d9cb4d-x2m9q"},
                                             {&Selector::container_name, "sidecar"}})}),
      (TargetHosts{{"web-1", PidList{102}}}));
  EXPECT_EQ(resolve(TargetScope::kProcess, {sel({{&Selector::process_name, "java"}})}),
            (TargetHosts{{"web-1", PidList{100}}, {"web-2", PidList{200}}}));
  EXPECT_EQ(resolve(TargetScope::kProcess,
                    {sel({{&Selector::hostname, "web-2"}, {&Selector::process_name, "java"}})}),
            (TargetHosts{{"web-2", PidList{200}}}));
  // Selectors add up; a selector for another service picks nothing.
  EXPECT_EQ(resolve(TargetScope::kProcess,
                    {with_pid(103), with_pid(201), sel({{&Selector::service_name, "db"}}, 300)}),
            (TargetHosts{{"web-1", PidList{103}}, {"web-2", PidList{201}}}));
  EXPECT_EQ(resolve(TargetScope::kNamespace, {sel({{&Selector::pod_namespace, "shop"}})}, "db"),
            (TargetHosts{{"db-1", PidList{300}}}));
  // Nothing matches: nothing.
  EXPECT_TRUE(resolve(TargetScope::kPod, {sel({{&Selector::pod_name, "nope"}})}).empty());
  EXPECT_TRUE(resolve(TargetScope::kProcess, {with_pid(999999)}).empty());
  EXPECT_TRUE(resolve(TargetScope::kNamespace, {}).empty());
}

// Issue 40: a heartbeat resolved each subscription of its service with a query per selector.
// It reads its host's inventory once and resolves every selector in memory: the same picks as
// the queries, for every scope and member, and for selectors in random combinations.
TEST_P(WorkloadStoreTest, AHostsInventoryResolvesSelectorsAsTheQueriesDo) {
  fleet();
  auto db = open_database();
  ASSERT_TRUE(db);
  std::vector<std::pair<TextMember, std::vector<std::string>>> values = {
      {&Selector::hostname, {"web-1", "web-2", "db-1"}},
      {&Selector::ip_address, {"10.0.0.7", "10.0.0.8"}},
      {&Selector::pod_namespace, {"shop", "ops", "none"}},
      {&Selector::workload_name, {"checkout", "cart"}},
      {&Selector::pod_name, {"checkout-7f8d9cb4d-x2m9q", "cart-0"}},
      {&Selector::container_name, {"app", "sidecar", "agent"}},
      {&Selector::process_name, {"java", "envoy", "python3"}},
      {&Selector::service_name, {"web", "db"}}};
  std::mt19937 random(40);
  const TargetScope scopes[] = {TargetScope::kService,  TargetScope::kHost, TargetScope::kNamespace,
                                TargetScope::kWorkload, TargetScope::kPod,  TargetScope::kContainer,
                                TargetScope::kProcess};
  for (int round = 0; round < 300; ++round) {
    TargetQuery query;
    query.service_name = "web";
    query.scope = scopes[random() % std::size(scopes)];
    query.active_window = std::chrono::minutes(2);
    for (unsigned n = random() % 4; n > 0; --n) {
      Selector selector;
      for (const auto& [member, choices] : values) {
        if (random() % 3 == 0) selector.*member = choices[random() % choices.size()];
      }
      if (random() % 4 == 0) selector.pid = 100 + random() % 4;
      query.selectors.push_back(selector);
    }
    TargetHosts by_queries = resolve(query.scope, query.selectors);
    for (const char* host : {"web-1", "web-2"}) {
      auto inventory = read_host_inventory(*db, host, "web", now_ - query.active_window);
      ASSERT_TRUE(inventory.ok() && *inventory) << host;
      control::SelectorResolver resolver(std::move(**inventory));
      auto in_memory = resolver.resolve(query);
      auto found = by_queries.find(host);
      if (found == by_queries.end()) {
        EXPECT_FALSE(in_memory) << "round " << round << " on " << host;
      } else {
        ASSERT_TRUE(in_memory) << "round " << round << " on " << host;
        EXPECT_EQ(*in_memory, found->second) << "round " << round << " on " << host;
      }
      // As a subscription's, on a heartbeat of this host: the selectors naming it or none,
      // taken as naming it, resolved by the queries.
      TargetQuery here = query;
      here.selectors.clear();
      for (Selector selector : query.selectors) {
        if (selector.hostname && *selector.hostname != host) continue;
        selector.hostname = host;
        here.selectors.push_back(selector);
      }
      std::optional<std::optional<PidList>> expected;
      if (!here.selectors.empty() || here.scope == TargetScope::kService) {
        TargetHosts picked = resolve(here.scope, here.selectors);
        if (auto on_host = picked.find(host); on_host != picked.end()) {
          expected = on_host->second;
        }
      }
      EXPECT_EQ(resolver.resolve_here(query.scope, "web", query.selectors), expected)
          << "round " << round << " on " << host << ", as a subscription's: scope "
          << static_cast<int>(query.scope) << ", " << selectors_to_json(query.selectors).dump();
    }
  }
}

// Issue 40: 100 subscriptions of 10,000 selectors made each heartbeat of their service take
// 2.6 s. A request has 100 selectors at most now, and 100 such subscriptions cost a heartbeat
// two queries and a lookup per selector.
TEST_P(WorkloadStoreTest, AHeartbeatUnderAHundredMaximalSubscriptionsStaysCheap) {
  fleet();
  auto timed_beats = [&](const std::string& hostname) {
    std::vector<double> seconds;
    for (int i = 0; i < 9; ++i) {
      auto begun = std::chrono::steady_clock::now();
      beat_with(hostname, {container("app", "shop", "cart-0", "cart", {{200, "java"}})});
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count());
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
  };
  const double plain = timed_beats("web-2");
  for (int s = 0; s < 100; ++s) {
    StartRequest start = this->start({{"web-1", PidList{100}}});
    start.continuous = true;
    SubscriptionSpec spec{TargetScope::kContainer, {}};
    for (int i = 0; i < 100; ++i) {
      spec.selectors.push_back(sel({{&Selector::container_name, "c-" + std::to_string(s * 100 + i)},
                                    {&Selector::pod_name, "pod-" + std::to_string(i)}}));
    }
    start.subscribe = spec;
    submit(start);
  }
  EXPECT_EQ(column("SELECT COUNT(*) FROM subscriptions WHERE ended_ms IS NULL"), "100");
  const double subscribed = timed_beats("web-2");
  // What the heartbeat did before: a query per subscription, for the selectors of each.
  auto subscriptions = store_->list_subscriptions(1000);
  ASSERT_TRUE(subscriptions.ok());
  auto begun = std::chrono::steady_clock::now();
  for (const Subscription& subscription : *subscriptions) {
    std::vector<Selector> selectors = subscription.spec.selectors;
    for (Selector& selector : selectors) selector.hostname = "web-2";
    resolve(subscription.spec.scope, selectors);
  }
  const double by_queries =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  std::printf(
      "a heartbeat: %.2f ms alone, %.2f ms under 100 subscriptions of 100 selectors; "
      "resolving them by queries %.2f ms\n",
      plain * 1e3, subscribed * 1e3, by_queries * 1e3);
  EXPECT_LT(subscribed * 10, by_queries) << "the inventory read once, the selectors in memory";
  // And the heartbeat resolves them as the queries do: nothing of these picks web-2.
  EXPECT_EQ(column("SELECT COUNT(*) FROM commands WHERE hostname = 'web-2'"), "0");
}

// Issue 40: each heartbeat of a service resolves its active subscriptions, so a service has 1,000
// of them at most: the next is refused, saying why, until one ends.
TEST_P(WorkloadStoreTest, AServiceHoldsAThousandActiveSubscriptionsAtMost) {
  auto db = open_database();
  ASSERT_TRUE(db);
  Subscription subscription;
  subscription.service_name = "web";
  subscription.request_id = "r";
  subscription.spec = SubscriptionSpec{TargetScope::kService, {}};
  subscription.created_at = now_;
  ASSERT_TRUE(db->execute("BEGIN").ok());
  for (size_t i = 0; i < kMaxActiveSubscriptions; ++i) {
    subscription.subscription_id = "s-" + std::to_string(i);
    ASSERT_TRUE(insert_subscription(*db, subscription).ok()) << i;
  }
  ASSERT_TRUE(db->execute("COMMIT").ok());
  subscription.subscription_id = "one-more";
  auto refused = insert_subscription(*db, subscription);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("1000 active subscriptions"), std::string::npos)
      << refused.error().message();
  subscription.service_name = "db";
  EXPECT_TRUE(insert_subscription(*db, subscription).ok()) << "another service has its own";
  ASSERT_TRUE(
      db->execute("UPDATE subscriptions SET ended_ms = 1 WHERE subscription_id = 's-7'").ok());
  subscription.service_name = "web";
  subscription.subscription_id = "after-one-ended";
  EXPECT_TRUE(insert_subscription(*db, subscription).ok());
}

TEST_P(WorkloadStoreTest, OnlyHostsHeardFromWithinTheWindowAreResolved) {
  fleet();
  now_ += std::chrono::minutes(1);
  beat_with("web-2", {container("app", "shop", "cart-0", "cart", {{200, "java"}})});
  now_ += std::chrono::seconds(61);  // web-1 is 2 min 1 s old, web-2 61 s
  EXPECT_EQ(resolve(TargetScope::kNamespace, {sel({{&Selector::pod_namespace, "shop"}})}),
            (TargetHosts{{"web-2", PidList{200}}}));
  EXPECT_EQ(resolve(TargetScope::kService, {}), (TargetHosts{{"web-2", std::nullopt}}));
}

// The status views read containers first and the processes of a page's containers after: a host
// that lists another container at the same position in between gives that position none.
TEST_P(WorkloadStoreTest, ProcessesAreReadLaterOnlyIntoTheContainersThatStillStand) {
  fleet();
  SnapshotQuery query;
  query.service_name = "web";
  auto snapshot = store_->workload_snapshot(query);
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message();
  ASSERT_EQ(snapshot->hosts.size(), 2u);
  ASSERT_EQ(snapshot->containers.size(), 5u);
  for (const ActiveContainer& c : snapshot->containers) {
    EXPECT_TRUE(c.container.processes.empty()) << "no host lists pids: none read yet";
  }
  EXPECT_EQ(snapshot->containers[0].process_count, 2);
  beat_with("web-2", {container("db", "ops", "pg-1", "pg", {{250, "postgres"}}),
                      container("app", "ops", "cart-0", "cart", {{201, "python3"}})});
  ASSERT_TRUE(store_->read_processes(*snapshot, {4, 0, 1, 3}).ok());
  auto pids_of = [&](size_t index) {
    std::vector<int64_t> pids;
    for (const HostProcess& p : snapshot->containers[index].container.processes) {
      pids.push_back(p.pid);
    }
    return pids;
  };
  EXPECT_EQ(pids_of(0), (std::vector<int64_t>{100, 101}));
  EXPECT_EQ(pids_of(1), (std::vector<int64_t>{102}));
  EXPECT_EQ(pids_of(2), (std::vector<int64_t>{})) << "not asked for";
  EXPECT_EQ(pids_of(3), (std::vector<int64_t>{})) << "position 0 of web-2 is another container";
  EXPECT_EQ(pids_of(4), (std::vector<int64_t>{201}));
  ASSERT_TRUE(store_->read_processes(*snapshot, {2, 1, 2}).ok());
  EXPECT_EQ(pids_of(1), (std::vector<int64_t>{102})) << "read once";
  EXPECT_EQ(pids_of(2), (std::vector<int64_t>{103}));
}

// Processes are read in statements of many containers each: each container gets its own, in pid
// order, however many are asked for.
TEST_P(WorkloadStoreTest, TheProcessesOfManyContainersAreReadIntoEachContainer) {
  std::vector<HostContainer> containers;
  for (int c = 0; c < 600; ++c) {
    containers.push_back(container("c" + std::to_string(c), "shop", "pod-" + std::to_string(c), "w",
                                   {{10'000 + c * 2 + 1, "late"}, {10'000 + c * 2, "early"}}));
  }
  beat_with("web-1", containers);
  auto snapshot = store_->workload_snapshot(SnapshotQuery{});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message();
  ASSERT_EQ(snapshot->containers.size(), 600u);
  std::vector<size_t> asked;
  for (size_t i = 599; i > 20; i -= 2) asked.push_back(i);  // 290: more than one statement
  ASSERT_TRUE(store_->read_processes(*snapshot, asked).ok());
  for (size_t i = 0; i < 600; ++i) {
    const ActiveContainer& entry = snapshot->containers[i];
    auto pid = static_cast<int64_t>(10'000 + entry.position * 2);
    std::vector<HostProcess> expected;
    if (i > 20 && i % 2 == 1) expected = {{pid, "early"}, {pid + 1, "late"}};
    EXPECT_EQ(entry.container.processes, expected) << "container " << i;
  }
}

// Each container's place comes from its host's count of containers. Where a count disagrees with
// the rows, the snapshot still holds every row, by host and position.
TEST_P(WorkloadStoreTest, ContainersFindTheirPlaceWhenAHostsCountIsWrong) {
  for (const char* host : {"web-1", "web-2", "web-3"}) {
    beat_with(host, {container("a", "ns", std::string(host) + "-pod", "w", {{1, "a"}}),
                     container("b", "ns", std::string(host) + "-pod", "w", {{2, "b"}})});
  }
  auto db = open_database();
  for (std::string_view sql :
       {"UPDATE hosts SET inventory_containers = 1 WHERE hostname = 'web-1'",
        "UPDATE hosts SET inventory_containers = 5 WHERE hostname = 'web-2'",
        "UPDATE hosts SET inventory_containers = -3 WHERE hostname = 'web-3'"}) {
    ASSERT_TRUE(db->execute(sql).ok()) << sql;
  }
  EXPECT_EQ(snapshot_containers(),
            (std::vector<std::string>{"web-1/0/a", "web-1/1/b", "web-2/0/a", "web-2/1/b",
                                      "web-3/0/a", "web-3/1/b"}));
}

// Rows come from the table in whatever order it keeps them: a snapshot still lists each host's
// containers together, by position, in the order of its hosts.
TEST_P(WorkloadStoreTest, ASnapshotOrdersContainersByHostThenPosition) {
  for (const char* host : {"web-3", "web-1", "web-2"}) {
    beat_with(host, {container("c", "ns", std::string(host) + "-pod", "w", {{1, "a"}}),
                     container("b", "ns", std::string(host) + "-pod", "w", {{2, "b"}}),
                     container("a", "ns", std::string(host) + "-pod", "w", {{3, "c"}})});
  }
  // web-1 rewritten: its rows go where the table has room.
  beat_with("web-1", {container("z", "ns", "web-1-pod", "w", {{4, "d"}}),
                      container("y", "ns", "web-1-pod", "w", {{5, "e"}})});
  EXPECT_EQ(snapshot_containers(),
            (std::vector<std::string>{"web-1/0/z", "web-1/1/y", "web-2/0/c", "web-2/1/b",
                                      "web-2/2/a", "web-3/0/c", "web-3/1/b", "web-3/2/a"}));
}

// Rows go in statements of many rows each: every row of a large inventory, in place.
TEST_P(WorkloadStoreTest, ALargeInventoryIsWrittenWhole) {
  std::vector<HostContainer> containers;
  for (int c = 0; c < 70; ++c) {
    std::vector<HostProcess> processes;
    for (int p = 0; p < (c == 0 ? 150 : 1); ++p) {
      processes.push_back({1000 * (c + 1) + p, "worker"});
    }
    containers.push_back(container("c" + std::to_string(c), "shop", "pod-" + std::to_string(c), "w",
                                   std::move(processes)));
  }
  beat_with("web-1", containers);
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_containers"), "70");
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes"), "219");
  EXPECT_EQ(column("SELECT MAX(position) FROM host_containers"), "69");
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes WHERE position = 0"), "150");
  EXPECT_EQ(column("SELECT process_count FROM host_containers WHERE position = 0"), "150");
  EXPECT_EQ(column("SELECT container_name FROM host_processes p JOIN host_containers c USING "
                   "(hostname, service_name, position) WHERE pid = 70000"),
            "c69");
}

TEST_P(WorkloadStoreTest, SqlInSelectorsIsOnlyEverAValue) {
  fleet();
  EXPECT_TRUE(resolve(TargetScope::kPod, {sel({{&Selector::pod_name, "x' OR '1'='1"}})}).empty());
  EXPECT_TRUE(resolve(TargetScope::kHost, {sel({{&Selector::hostname, "web-1' --"}})}).empty());
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes"), "7");
}

TEST_P(WorkloadStoreTest, ExpiredHostsTakeTheirInventoryWithThem) {
  fleet();
  now_ += std::chrono::hours(1);
  auto expired = store_->expire_hosts_before(now_ - std::chrono::minutes(30), 100);
  ASSERT_TRUE(expired.ok()) << expired.error().message();
  EXPECT_EQ(*expired, 3);
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_containers"), "0");
  EXPECT_EQ(column("SELECT COUNT(*) FROM host_processes"), "0");
}

TEST_P(WorkloadStoreTest, SubscriptionsEnrollFollowOptOutAndEnd) {
  fleet();
  StartRequest start = this->start({{"web-1", PidList{100, 101, 102}}});
  start.continuous = true;
  start.subscribe = SubscriptionSpec{TargetScope::kPod,
                                     {sel({{&Selector::pod_name, "checkout-7f8d9cb4d-x2m9q"}})}};
  submit(start);
  // The pod moves to web-2 with new pids: web-2 is enrolled, web-1 stopped.
  beat_with("web-1", {});
  beat_with("web-2",
            {container("app", "shop", "checkout-7f8d9cb4d-x2m9q", "checkout", {{500, "java"}})});
  auto subscriptions = store_->list_subscriptions();
  ASSERT_TRUE(subscriptions.ok()) << subscriptions.error().message();
  ASSERT_EQ(subscriptions->size(), 1u);
  EXPECT_EQ((*subscriptions)[0].spec.selectors[0].pod_name, "checkout-7f8d9cb4d-x2m9q");
  EXPECT_EQ(column("SELECT command_type || ':' || COALESCE(pids, 'host') FROM commands "
                   "WHERE replaced_by IS NULL ORDER BY hostname"),
            "stop:host,start:[500]");
  // Stopped by name: opted out. Ended by a stop with the same selectors.
  StopRequest by_name = stop({{"web-2", std::nullopt}}, StopLevel::kHost);
  by_name.opt_out = true;
  submit(by_name);
  subscriptions = store_->list_subscriptions();
  ASSERT_TRUE(subscriptions.ok());
  EXPECT_EQ((*subscriptions)[0].opted_out, std::vector<std::string>{"web-2"});
  StopRequest ending = stop({{"web-1", std::nullopt}}, StopLevel::kHost);
  ending.unsubscribe = (*subscriptions)[0].spec;
  submit(ending);
  subscriptions = store_->list_subscriptions();
  ASSERT_TRUE(subscriptions.ok());
  EXPECT_TRUE((*subscriptions)[0].ended_at.has_value());
}

// Replicas of one PostgreSQL database: what one stores of a host's inventory, another resolves and
// subscribes to; the commands a subscription makes in a heartbeat on one are heard by the others
// (their held heartbeats wake).
class WorkloadReplicaTest : public WorkloadStoreTest {};
INSTANTIATE_TEST_SUITE_P(Stores, WorkloadReplicaTest, ::testing::Values(Dialect::kPostgres),
                         store_name);

TEST_P(WorkloadReplicaTest, InventoryAndSubscriptionsAreSharedAndTheirCommandsHeard) {
  auto replica = open_another();
  ASSERT_TRUE(replica.ok()) << replica.error().message();
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> heard;
  (*replica)->on_commands(
      [&](const std::string& hostname, const std::string& service) {
        std::lock_guard lock(mutex);
        heard.push_back(hostname + "/" + service);
        changed.notify_all();
      },
      [] {});
  fleet();  // on this store

  TargetQuery query;
  query.service_name = "web";
  query.scope = TargetScope::kPod;
  query.selectors = {sel({{&Selector::pod_name, "cart-0"}, {&Selector::pod_namespace, "shop"}})};
  query.active_window = std::chrono::minutes(2);
  auto targets = (*replica)->resolve_targets(query);
  ASSERT_TRUE(targets.ok()) << targets.error().message();
  EXPECT_EQ(*targets, (TargetHosts{{"web-2", PidList{200}}}));

  StartRequest start = this->start(*targets);
  start.continuous = true;
  start.subscribe = SubscriptionSpec{TargetScope::kPod, query.selectors};
  ASSERT_TRUE(control::Commands(**replica).submit_start(start).ok());
  // The pod moves to web-3, which heartbeats to this store: it is enrolled in that heartbeat.
  beat_with("web-2", {container("app", "ops", "cart-0", "cart", {{201, "python3"}})});
  HostHeartbeat beat = heartbeat("web-3", "web");
  beat.containers = {container("app", "shop", "cart-0", "cart", {{900, "java"}})};
  auto answer = commands_->record_heartbeat(beat);
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  ASSERT_TRUE(answer->command.has_value());
  EXPECT_EQ(answer->command->combined_config["pids"], nlohmann::json({900}));

  std::unique_lock lock(mutex);
  EXPECT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] {
    return std::find(heard.begin(), heard.end(), "web-3/web") != heard.end();
  })) << "the other replica never heard of web-3's command";
  lock.unlock();
  (*replica)->on_commands({}, {});
  auto listed = (*replica)->list_subscriptions();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
}

TEST_P(WorkloadStoreTest, RetentionKeepsTheRequestOfASubscriptionThatStands) {
  beat_with("web-1", {});
  StartRequest start = this->start({{"web-1", std::nullopt}});
  start.continuous = true;
  start.subscribe = SubscriptionSpec{TargetScope::kService, {}};
  SubmitOutcome made = submit(start);
  submit(stop({{"web-1", std::nullopt}}, StopLevel::kHost));  // opts web-1 out
  submit(stop({{"web-1", std::nullopt}}, StopLevel::kHost));  // replaces the first stop
  now_ += std::chrono::hours(48);
  auto expired = store_->expire_before(now_ - std::chrono::hours(24), 100);
  ASSERT_TRUE(expired.ok()) << expired.error().message();
  EXPECT_EQ(column("SELECT COUNT(*) FROM profiling_requests WHERE request_id = '" +
                   made.request_id + "'"),
            "1");
  EXPECT_GE(expired->requests, 1);
}

}  // namespace
}  // namespace dormant::server::storage
