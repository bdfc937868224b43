// dormant-agent given two control servers (--api-server A,B), two real dormant-servers on loopback
// TLS: A is killed with SIGKILL, and the agent goes on with B: its heartbeats, a command started
// there, the command's completion and the session's profiles all reach B.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heartbeat_fixture.h"
#include "server_process.h"
#include "tests/support/eventually.h"
#include "tests/support/postgres_cluster.h"
#include "workload.h"

namespace dormant::testing {
namespace {

class AgentFailoverTest : public HeartbeatFixture {
 protected:
  void TearDown() override {
    standby_.reset();
    HeartbeatFixture::TearDown();
  }

  // Another server: a folder of its own, the first one's certificates (the agent trusts one CA)
  // and tokens.
  std::unique_ptr<ServerProcess> another_server(const std::string& name,
                                                const std::vector<std::string>& args = {}) {
    fs::path root = root_ / name;
    fs::create_directories(root);
    fs::copy(root_ / "certs", root / "certs", fs::copy_options::recursive);
    fs::copy_file(root_ / "tokens", root / "tokens");
    auto server = std::make_unique<ServerProcess>(root);
    EXPECT_TRUE(server->start(args)) << server->log();
    return server;
  }
  void start_standby() { standby_ = another_server("standby"); }

  // agent_args with `api_server` for --api-server.
  std::vector<std::string> agent_args_with(const std::string& api_server) {
    std::vector<std::string> args = agent_args(server_->port());
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--api-server") args[i + 1] = api_server;
    }
    return args;
  }

  bool every_profile_delivered() {
    return eventually([&] { return static_cast<int>(server_profiles()) >= profiles_written(); },
                      60s);
  }

  int profiles_written() {
    int written = 0;
    for (const auto& entry : fs::directory_iterator(root_ / "out")) {
      written += entry.path().extension() == ".col" && !fs::is_symlink(entry.path());
    }
    return written;
  }

  std::unique_ptr<ServerProcess> standby_;
};

TEST_F(AgentFailoverTest, AServerKilledWithSigkillIsLeftForTheNextOneAndNothingIsLost) {
  ASSERT_NO_FATAL_FAILURE(start_server());
  ASSERT_NO_FATAL_FAILURE(start_standby());
  std::string a = "https://localhost:" + std::to_string(server_->port());
  std::string b = "https://localhost:" + std::to_string(standby_->port());
  start_agent(agent_args_with(a + "," + b));
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << "no heartbeat reached the first server\n"
      << agent_log();
  EXPECT_TRUE(standby_->get("/api/hosts?service=it").json()["hosts"].empty())
      << "the agent left a server that works";

  server_->kill();
  server_ = std::move(standby_);  // from now on the fixture's calls go to B
  ASSERT_TRUE(eventually([&] { return agent_health()["state"] == "idle"; }, 60s))
      << "no heartbeat reached the second server\n"
      << agent_log();
  EXPECT_GE(log_count("control server " + a + " failed ("), 1) << agent_log();
  EXPECT_GE(log_count("next requests go to " + b), 1) << agent_log();

  auto busy = spawn_workload(40);
  std::string start = request("start", {{"continuous", true}, {"duration", 2}, {"frequency", 49}});
  ASSERT_FALSE(start.empty());
  ASSERT_TRUE(command_reaches(start, "completed")) << command_status(start) << "\n" << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 60s))
      << "no profile reached the second server\n"
      << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(back_to_idle()) << agent_log();
  ASSERT_TRUE(every_profile_delivered())
      << "profiles were lost: " << server_profiles() << " of " << profiles_written() << "\n"
      << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  stop_agent();
}

// Three replicas on one PostgreSQL database, the agent given all three. Its heartbeats are
// long-polls held by the first; a request made on the third reaches it through the database at
// once. The first is killed: the agent goes on with the second, and what it reports there is
// what the third shows.
TEST_F(AgentFailoverTest, ReplicasOnOneDatabaseServeAnAgentWhicheverItReaches) {
  if (std::string why = PostgresCluster::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto cluster = PostgresCluster::start();
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  auto url = (*cluster)->create_database();
  ASSERT_TRUE(url.ok()) << url.error().message();
  const std::vector<std::string> shared = {"--database", *url};
  ASSERT_TRUE(server_->start(shared)) << server_->log();
  auto second = another_server("second", shared);
  auto third = another_server("third", shared);
  ASSERT_TRUE(second->port() != 0 && third->port() != 0);
  auto url_of = [](const ServerProcess& server) {
    return "https://localhost:" + std::to_string(server.port());
  };
  start_agent(agent_args_with(url_of(*server_) + "," + url_of(*second) + "," + url_of(*third)));
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();

  std::unique_ptr<ServerProcess> first = std::move(server_);
  server_ = std::move(third);  // requests and reads go to the third replica
  auto busy = spawn_workload(40);
  std::string start = request("start", {{"continuous", true}, {"duration", 2}, {"frequency", 49}});
  ASSERT_FALSE(start.empty());
  ASSERT_TRUE(command_reaches(start, "completed")) << command_status(start) << "\n" << agent_log();
  EXPECT_GE(first->metric("dormant_server_long_polls_woken_total"), 1)
      << "the command did not wake the heartbeat held by the first replica";

  first->kill();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  EXPECT_GE(log_count("next requests go to " + url_of(*second)), 1) << agent_log();
  ASSERT_TRUE(back_to_idle()) << agent_log();
  ASSERT_TRUE(every_profile_delivered())
      << "profiles were lost: " << server_profiles() << " of " << profiles_written() << "\n"
      << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  stop_agent();
  second.reset();
  server_.reset();
}

}  // namespace
}  // namespace dormant::testing
