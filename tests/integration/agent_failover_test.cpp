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
#include "workload.h"

namespace dormant::testing {
namespace {

class AgentFailoverTest : public HeartbeatFixture {
 protected:
  void TearDown() override {
    standby_.reset();
    HeartbeatFixture::TearDown();
  }

  // The second server: a data directory of its own, the first one's certificates (the agent
  // trusts one CA) and tokens.
  void start_standby() {
    fs::path root = root_ / "standby";
    fs::create_directories(root);
    fs::copy(root_ / "certs", root / "certs", fs::copy_options::recursive);
    fs::copy_file(root_ / "tokens", root / "tokens");
    standby_ = std::make_unique<ServerProcess>(root);
    ASSERT_TRUE(standby_->start()) << standby_->log();
  }

  // agent_args with `api_server` for --api-server.
  std::vector<std::string> agent_args_with(const std::string& api_server) {
    std::vector<std::string> args = agent_args(server_->port());
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--api-server") args[i + 1] = api_server;
    }
    return args;
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
  ASSERT_TRUE(
      eventually([&] { return static_cast<int>(server_profiles()) >= profiles_written(); }, 60s))
      << "profiles were lost: " << server_profiles() << " of " << profiles_written() << "\n"
      << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  stop_agent();
}

}  // namespace
}  // namespace dormant::testing
