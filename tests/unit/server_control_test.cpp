// The control layer's rules, without a database: what the planner and the subscription follower
// decide from what the store would have read.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/control/command_plan.h"
#include "server/control/selector_resolver.h"
#include "server/control/subscription_follower.h"
#include "server/storage/combined_config.h"

namespace dormant::server::control {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using storage::build_combined_config;
using storage::CommandRow;
using storage::CommandStatus;
using storage::CommandType;
using storage::from_unix_ms;
using storage::HostInventory;
using storage::HostSubscription;
using storage::InventoryProcess;
using storage::PlannedHost;
using storage::ProfilingMode;
using storage::ProfilingRequestRecord;
using storage::Selector;
using storage::SubscriptionReads;
using storage::TargetScope;

CommandSpec start_spec(std::optional<PidList> pids) {
  CommandSpec spec;
  spec.pids = std::move(pids);
  return spec;
}

TEST(CommandPlanTest, CombinedConfigSpreadsAdditionalArgsFlat) {
  CommandSpec start = start_spec(PidList{5, 7});
  start.continuous = true;
  start.duration_s = 30;
  start.frequency_hz = 99;
  start.mode = ProfilingMode::kAllocation;
  start.additional_args = {{"max_processes", 3}, {"profiler_configs", {{"perf", "disabled"}}}};
  EXPECT_EQ(build_combined_config(start), json({{"command_type", "start"},
                                                {"continuous", true},
                                                {"duration", 30},
                                                {"frequency", 99},
                                                {"profiling_mode", "allocation"},
                                                {"pids", {5, 7}},
                                                {"max_processes", 3},
                                                {"profiler_configs", {{"perf", "disabled"}}}}));
  EXPECT_FALSE(build_combined_config(start_spec(std::nullopt)).contains("pids"));

  auto host_stop = plan_stop(StopLevel::kHost, std::nullopt, std::nullopt, {});
  EXPECT_EQ(build_combined_config(*host_stop.spec), json({{"stop_level", "host"}}));
  auto process_stop = plan_stop(StopLevel::kProcess, PidList{4}, std::nullopt, {});
  EXPECT_EQ(process_stop.action, PlanAction::kProcessStop);
  EXPECT_EQ(build_combined_config(*process_stop.spec),
            json({{"stop_level", "process"}, {"pids", {4}}}));
}

TEST(CommandPlanTest, OnlyStartsThatRunOrWillRunStand) {
  TimePoint now = from_unix_ms(1'000'000);
  CurrentCommand one_shot{start_spec(PidList{1}), CommandStatus::kCompleted, now - seconds(30)};
  one_shot.spec.duration_s = 60;
  EXPECT_TRUE(is_standing_start(one_shot, now));  // still in its 60 s
  one_shot.completed_at = now - seconds(61);
  EXPECT_FALSE(is_standing_start(one_shot, now));
  one_shot.spec.continuous = true;
  EXPECT_TRUE(is_standing_start(one_shot, now));
  one_shot.status = CommandStatus::kFailed;
  EXPECT_FALSE(is_standing_start(one_shot, now));
  one_shot.status = CommandStatus::kSent;
  EXPECT_TRUE(is_standing_start(one_shot, now));
  CurrentCommand stop{{}, CommandStatus::kPending, std::nullopt};
  stop.spec.type = CommandType::kStop;
  EXPECT_FALSE(is_standing_start(stop, now));
}

TEST(CommandPlanTest, AMergedStartCarriesABoundedShareOfTheRequestsBeforeIt) {
  CommandRow current;
  current.command.command_id = "standing";
  for (int i = 0; i < 100; ++i) current.command.request_ids.push_back("r" + std::to_string(i));
  HostChange merge{PlanAction::kMerged, start_spec(std::nullopt), true};
  PlannedHost next =
      next_command("web-01", "web", merge, current, "newest", from_unix_ms(5'000), false);
  ASSERT_TRUE(next.row);
  const auto& ids = next.row->command.request_ids;
  ASSERT_EQ(ids.size(), kMaxRequestsPerCommand);
  EXPECT_EQ(ids.front(), "r" + std::to_string(100 - (kMaxRequestsPerCommand - 1)));
  EXPECT_EQ(ids.back(), "newest");
  EXPECT_EQ(next.plan.replaces, "standing");
  EXPECT_FALSE(next.row->command.command_id.empty());

  PlannedHost dry = next_command("web-01", "web", merge, current, "newest", {}, true);
  EXPECT_TRUE(dry.plan.command->command_id.empty());
  HostChange nothing{PlanAction::kUnchanged, std::nullopt, false};
  EXPECT_FALSE(next_command("web-01", "web", nothing, current, "newest", {}, false).row);
}

// ---------------------------------------------------------------------------------------------
// Selectors against one host's inventory

HostInventory inventory_of(std::vector<std::pair<std::string, pid_t>> processes) {
  HostInventory inventory{"web-01", "10.0.0.7", {}};
  for (auto& [name, pid] : processes) {
    InventoryProcess process;
    process.pod_namespace = "shop";
    process.container_name = name + "-container";
    process.process_name = name;
    process.pid = pid;
    inventory.processes.push_back(process);
  }
  return inventory;
}

Selector process_named(const std::string& name) {
  Selector selector;
  selector.process_name = name;
  return selector;
}

TEST(SelectorResolverTest, ASubscriptionsSelectorsNamingAnotherHostPickNothingHere) {
  SelectorResolver resolver(inventory_of({{"java", 10}, {"java", 12}, {"envoy", 11}}));
  EXPECT_EQ(resolver.resolve_here(TargetScope::kProcess, "web", {process_named("java")}),
            std::optional<std::optional<PidList>>(PidList{10, 12}));
  Selector elsewhere = process_named("java");
  elsewhere.hostname = "web-02";
  EXPECT_EQ(resolver.resolve_here(TargetScope::kProcess, "web", {elsewhere}), std::nullopt);
  // A service's scope whose selectors all name other hosts: the whole of this one.
  EXPECT_EQ(resolver.resolve_here(TargetScope::kService, "web", {elsewhere}),
            std::optional<std::optional<PidList>>(std::optional<PidList>()));
  EXPECT_EQ(resolver.resolve_here(TargetScope::kProcess, "web", {process_named("ruby")}),
            std::nullopt);
}

// ---------------------------------------------------------------------------------------------
// The subscription follower

class FollowerTest : public ::testing::Test {
 protected:
  HostSubscription subscribe(const std::string& request_id, TargetScope scope,
                             std::vector<Selector> selectors, TimePoint created_at) {
    auto shared = std::make_shared<const std::vector<Selector>>(std::move(selectors));
    return {request_id, scope, shared, created_at};
  }

  void add_request(const std::string& request_id, int64_t frequency_hz) {
    ProfilingRequestRecord record;
    record.request_id = request_id;
    record.service_name = "web";
    record.continuous = true;
    record.duration_s = 30;
    record.frequency_hz = frequency_hz;
    record.mode = ProfilingMode::kCpu;
    record.additional_args = json{{"max_processes", 4}};
    requests_[request_id] = record;
  }

  // The current command: a start or a stop the given requests made, with its status.
  void set_current(CommandType type, std::optional<PidList> pids, std::vector<std::string> ids,
                   TimePoint created_at, CommandStatus status = CommandStatus::kSent) {
    CommandRow row;
    row.command.command_id = "current";
    row.command.type = row.spec.type = type;
    row.command.status = status;
    row.command.created_at = created_at;
    row.command.request_ids = std::move(ids);
    row.spec.continuous = true;
    row.spec.pids = std::move(pids);
    current_ = row;
  }

  Result<std::optional<PlannedHost>> follow() {
    SubscriptionReads reads{
        "web-01",
        "web",
        now_,
        subscriptions_,
        current_,
        [this]() -> Result<std::optional<HostInventory>> {
          ++inventory_reads_;
          if (inventory_error_) return Error(ErrorKind::kUnavailable, "database gone");
          return inventory_;
        },
        [this](const std::string& id) -> Result<std::optional<ProfilingRequestRecord>> {
          auto found = requests_.find(id);
          if (found == requests_.end()) return std::optional<ProfilingRequestRecord>();
          return std::optional<ProfilingRequestRecord>(found->second);
        }};
    return follow_subscriptions(reads);
  }

  TimePoint now_ = from_unix_ms(1'750'000'000'000);
  std::vector<HostSubscription> subscriptions_;
  std::optional<CommandRow> current_;
  std::optional<HostInventory> inventory_ =
      inventory_of({{"java", 10}, {"java", 12}, {"envoy", 11}});
  bool inventory_error_ = false;
  int inventory_reads_ = 0;
  std::map<std::string, ProfilingRequestRecord> requests_;
};

TEST_F(FollowerTest, AHostWithoutACommandGetsWhatItsSubscriptionsPickWithTheOldestsSettings) {
  add_request("older", 19);
  add_request("newer", 99);
  subscriptions_ = {
      subscribe("older", TargetScope::kProcess, {process_named("envoy")}, now_ - seconds(60)),
      subscribe("newer", TargetScope::kProcess, {process_named("java")}, now_ - seconds(30))};
  auto followed = follow();
  ASSERT_TRUE(followed.ok()) << followed.error().message();
  ASSERT_TRUE(*followed && (*followed)->row);
  const CommandRow& row = *(*followed)->row;
  EXPECT_EQ(row.spec.pids, PidList({10, 11, 12}));
  EXPECT_TRUE(row.spec.continuous);
  EXPECT_EQ(row.spec.frequency_hz, 19);
  EXPECT_EQ(row.spec.additional_args, json({{"max_processes", 4}}));
  EXPECT_EQ(row.command.request_ids, std::vector<std::string>{"older"});
  EXPECT_EQ((*followed)->plan.action, PlanAction::kNew);

  // One that picks the host whole makes it a whole-host start.
  subscriptions_.push_back(subscribe("newer", TargetScope::kService, {}, now_));
  followed = follow();
  ASSERT_TRUE(followed.ok() && *followed);
  EXPECT_EQ((*followed)->row->spec.pids, std::nullopt);
}

TEST_F(FollowerTest, AnExplicitStartOrALaterStopStandsAndTheInventoryIsNotRead) {
  add_request("sub", 11);
  subscriptions_ = {
      subscribe("sub", TargetScope::kProcess, {process_named("java")}, now_ - seconds(60))};
  set_current(CommandType::kStart, PidList{77}, {"explicit"}, now_ - seconds(90));
  auto followed = follow();
  ASSERT_TRUE(followed.ok());
  EXPECT_FALSE(*followed);
  set_current(CommandType::kStop, std::nullopt, {"explicit-stop"}, now_ - seconds(10));
  followed = follow();
  ASSERT_TRUE(followed.ok());
  EXPECT_FALSE(*followed);
  EXPECT_EQ(inventory_reads_, 0);

  // A stop made before the subscription does not stand against it.
  set_current(CommandType::kStop, std::nullopt, {"explicit-stop"}, now_ - seconds(120));
  followed = follow();
  ASSERT_TRUE(followed.ok() && *followed);
  EXPECT_EQ((*followed)->plan.action, PlanAction::kReplaced);
  EXPECT_EQ((*followed)->plan.replaces, "current");
}

TEST_F(FollowerTest, ItsOwnStartFollowsThePicksAndStopsWhenNothingIsLeft) {
  add_request("sub", 11);
  subscriptions_ = {
      subscribe("sub", TargetScope::kProcess, {process_named("java")}, now_ - seconds(60))};
  set_current(CommandType::kStart, PidList{10, 12}, {"sub"}, now_ - seconds(30));
  auto followed = follow();
  ASSERT_TRUE(followed.ok());
  EXPECT_FALSE(*followed) << "the same pids: no new command";

  inventory_ = inventory_of({{"java", 10}, {"envoy", 11}});
  followed = follow();
  ASSERT_TRUE(followed.ok() && *followed);
  EXPECT_EQ((*followed)->row->spec.pids, PidList({10}));

  inventory_ = inventory_of({{"envoy", 11}});
  followed = follow();
  ASSERT_TRUE(followed.ok() && *followed);
  EXPECT_EQ((*followed)->row->spec.type, CommandType::kStop);
  EXPECT_EQ((*followed)->row->spec.stop_level, StopLevel::kHost);
  EXPECT_EQ((*followed)->row->command.request_ids, std::vector<std::string>{"sub"});

  // Its start over (a one-shot that ran out would not stand): nothing to stop.
  set_current(CommandType::kStart, PidList{10}, {"sub"}, now_ - seconds(30),
              CommandStatus::kFailed);
  followed = follow();
  ASSERT_TRUE(followed.ok());
  EXPECT_FALSE(*followed);
}

TEST_F(FollowerTest, AnExpiredRequestRunsNothingAndAReadErrorIsPassedOn) {
  subscriptions_ = {
      subscribe("expired", TargetScope::kProcess, {process_named("java")}, now_ - seconds(60))};
  auto followed = follow();
  ASSERT_TRUE(followed.ok());
  EXPECT_FALSE(*followed);

  inventory_error_ = true;
  followed = follow();
  ASSERT_FALSE(followed.ok());
  EXPECT_EQ(followed.error().message(), "database gone");
}

}  // namespace
}  // namespace dormant::server::control
