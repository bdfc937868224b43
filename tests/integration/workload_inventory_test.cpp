// The agent's inventory end to end: a process in a container's cgroup on this host is reported
// in the heartbeat, shown by workload_status, and profiled when a request selects its container.
#include <string>

#include <gtest/gtest.h>

#include "heartbeat_fixture.h"
#include "scoped_cgroup.h"

#include "profilers/system/cgroup_layout.h"

namespace dormant::testing {
namespace {

class WorkloadInventoryTest : public HeartbeatFixture {};

// End to end: the inventory is attached to heartbeats, the backend's pids are what the command
// carries, and the completion names the command.
TEST_F(WorkloadInventoryTest, AContainersProcessIsReportedShownAndProfiledByItsContainer) {
  auto layout = profilers::system::detect_cgroup_layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  // Any hierarchy names a container's cgroup: the memory controller's (v1) or cgroup2's.
  std::optional<profilers::system::CgroupMount> hierarchy =
      layout->memory ? layout->memory : layout->unified;
  if (!hierarchy) GTEST_SKIP() << "no memory or cgroup2 hierarchy: " << describe(*layout);
  // A docker container's cgroup as the systemd driver names it; no docker state on this host,
  // so the container is named by its short id.
  char id[65];
  std::snprintf(id, sizeof id, "%064x", static_cast<unsigned>(::getpid()));
  std::string short_id(id, 12);
  ScopedCgroup cgroup(hierarchy->mount_point / ("dormant-it-" + std::to_string(::getpid())) /
                      ("docker-" + std::string(id) + ".scope"));
  auto sleeper = Subprocess::spawn(SpawnOptions{.argv = {"sleep", "300"}});
  ASSERT_TRUE(sleeper.ok()) << sleeper.error().message();
  cgroup.add((*sleeper)->pid());

  start_server();
  std::vector<std::string> args = agent_args(server_->port());
  args.insert(args.end(), {"--inventory-interval", "1"});
  start_agent(args, {"KUBERNETES_SERVICE_HOST=10.96.0.1", "POD_NAMESPACE=observability",
                     "POD_NAME=dormant-agent-x7k2p"});

  json row;
  ASSERT_TRUE(eventually(
      [&] {
        json rows =
            server_
                ->get(
                    "/api/metrics/profiling/workload_status?scope=container&service_name=it&"
                    "exact_match=true")
                .json()["rows"];
        for (const json& each : rows) {
          if (each["containerName"] == short_id) row = each;
        }
        return !row.is_null();
      },
      30s))
      << agent_log();
  EXPECT_EQ(row["hostname"], hostname_);
  EXPECT_EQ(row["pids"], json({(*sleeper)->pid()}));
  EXPECT_EQ(row["workloadKind"], "container") << row;
  EXPECT_EQ(row["runMode"], "k8s");
  json health = agent_health();
  EXPECT_GE(health["inventory"]["containers"].get<int>(), 1) << health;

  // While the list stays the same, heartbeats carry the digest the server answered for it, and
  // the server keeps the list; a process more in the container sends the list again.
  ASSERT_TRUE(eventually(
      [&] { return agent_health()["inventory"]["heartbeats_with_digest"].get<int>() >= 2; }, 30s))
      << agent_health();
  auto second = Subprocess::spawn(SpawnOptions{.argv = {"sleep", "300"}});
  ASSERT_TRUE(second.ok()) << second.error().message();
  cgroup.add((*second)->pid());
  auto pids_shown = [&] {
    json rows = server_
                    ->get(
                        "/api/metrics/profiling/workload_status?scope=container&service_name=it&"
                        "exact_match=true")
                    .json()["rows"];
    for (const json& each : rows) {
      if (each["containerName"] == short_id) return each["pids"];
    }
    return json();
  };
  EXPECT_TRUE(eventually(
      [&] {
        return pids_shown() == json({(*sleeper)->pid(), (*second)->pid()});
      },
      30s))
      << pids_shown();

  HttpReply started = server_->post_json(
      "/api/metrics/profile_request",
      {{"service_name", "it"},
       {"request_type", "start"},
       {"continuous", true},
       {"target_scope", "container"},
       {"target_entities", {{{"containerName", short_id}, {"hostname", hostname_}}}}});
  ASSERT_EQ(started.status, 200) << started.body;
  std::string command_id = started.json()["command_ids"][0];
  json command = server_->get("/api/commands/" + command_id).json();
  EXPECT_EQ(command["combined_config"]["pids"], json({(*sleeper)->pid(), (*second)->pid()}));
  EXPECT_EQ(command["combined_config"]["target_scope"], "container");
  EXPECT_TRUE(command_reaches(command_id, "completed")) << agent_log();
  stop_agent();
  for (auto* process : {&*sleeper, &*second}) {
    ::kill((*process)->pid(), SIGKILL);
    (void)(*process)->wait(deadline_after(10s));
  }
}

}  // namespace
}  // namespace dormant::testing
