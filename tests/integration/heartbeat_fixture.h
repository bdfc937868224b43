// The fixture of the heartbeat-mode tests: a real dormant-server on loopback TLS, the agent
// against it, and the calls a user makes by curl.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "server_process.h"
#include "tests/support/eventually.h"

#include "common/atomic_file.h"
#include "common/subprocess.h"

namespace dormant::testing {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

inline std::string this_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

class HeartbeatFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: perf -a and perf_event_paranoid";
    if (!run_command({"perf", "--version"}, deadline_after(10s)).ok()) {
      GTEST_SKIP() << "perf is not installed";
    }
    root_ = fs::temp_directory_path() /
            ("dormant-hb-it-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "tmp");
    server_ = std::make_unique<ServerProcess>(root_);
    hostname_ = this_hostname();
  }
  void TearDown() override {
    if (agent_) {
      ::kill(agent_->pid(), SIGKILL);
      agent_.reset();
    }
    server_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }

  void start_server(uint16_t port = 0) { ASSERT_TRUE(server_->start({}, port)) << server_->log(); }

  // The agent's token, in a file only root reads: on the command line the agent warns about it.
  fs::path token_file() {
    fs::path path = root_ / "agent-token-file";
    if (!fs::exists(path)) {
      std::ofstream(path) << kToken << "\n";
      fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    }
    return path;
  }

  std::vector<std::string> agent_args(uint16_t port, const std::string& interval = "1",
                                      const std::string& log_level = "debug") {
    return {DORMANT_AGENT,
            "--enable-heartbeat-server",
            "--api-server",
            "https://localhost:" + std::to_string(port),
            "--tls-ca-bundle",
            (root_ / "certs" / "ca.pem").string(),
            "--token-file",
            token_file().string(),
            "--service-name",
            "it",
            "--heartbeat-interval",
            interval,
            "-u",
            "-o",
            (root_ / "out").string(),
            "--state-dir",
            (root_ / "state").string(),
            "--host-lock",
            (root_ / "run" / "agent.lock").string(),
            "--log-level",
            log_level};
  }

  void start_agent(std::vector<std::string> args, std::vector<std::string> env = {}) {
    SpawnOptions options;
    options.argv = std::move(args);
    options.env = {"TMPDIR=" + (root_ / "tmp").string()};
    options.env.insert(options.env.end(), env.begin(), env.end());
    options.stdout_to = Redirect::null();
    options.stderr_to = Redirect::file(root_ / "agent.log", /*append=*/true);
    auto agent = Subprocess::spawn(options);
    ASSERT_TRUE(agent.ok()) << agent.error().message();
    agent_ = std::move(*agent);
  }
  void start_agent() { start_agent(agent_args(server_->port())); }

  std::string agent_log() { return read_file(root_ / "agent.log").value_or(""); }
  int log_count(const std::string& needle) {
    std::string log = agent_log();
    int count = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
      ++count;
    }
    return count;
  }

  // SIGTERM; the agent must exit by itself, successfully.
  void stop_agent() {
    ::kill(agent_->pid(), SIGTERM);
    auto status = agent_->wait(deadline_after(60s));
    ASSERT_TRUE(status.ok()) << "the agent did not stop on SIGTERM\n" << agent_log();
    EXPECT_TRUE(status->success()) << status->describe() << "\n" << agent_log();
    agent_.reset();
  }

  json host() {
    json hosts = server_->get("/api/hosts?service=it").json()["hosts"];
    for (const auto& host : hosts) {
      if (host["hostname"] == hostname_) return host;
    }
    return json();
  }
  json agent_health() {
    json found = host();
    return found.is_null() ? json() : found["agent_health"];
  }

  std::string request(const std::string& type, json extra = json::object()) {
    json body = {
        {"service_name", "it"}, {"request_type", type}, {"target_hosts", {{hostname_, nullptr}}}};
    body.update(extra);
    HttpReply reply = server_->post_json("/api/metrics/profile_request", body);
    EXPECT_EQ(reply.status, 200) << reply.body;
    json answer = reply.json();
    return answer["command_ids"].is_array() && !answer["command_ids"].empty()
               ? answer["command_ids"][0].get<std::string>()
               : "";
  }
  std::string command_status(const std::string& command_id) {
    json command = server_->get("/api/commands/" + command_id).json();
    return command["status"].is_string() ? command["status"].get<std::string>() : "";
  }
  bool command_reaches(const std::string& command_id, const std::string& status,
                       std::chrono::seconds limit = 60s) {
    return eventually([&] { return command_status(command_id) == status; }, limit);
  }
  size_t server_profiles() {
    return server_->get("/api/profiles?service=it").json()["profiles"].size();
  }
  bool back_to_idle() {
    return eventually(
        [&] {
          json health = agent_health();
          return health.is_object() && health["state"] == "idle" &&
                 health["last_teardown_audit"].is_object();
        },
        60s);
  }

  // The start/stop cycles a test runs: 50, or DORMANT_IT_CYCLES. Each cycle's audit checks fds,
  // children, threads and BPF objects exactly; more cycles only sharpen the memory check, and
  // scripts/soak runs cycles for hours (DORMANT_IT_CYCLES=200 took 9 of CI's minutes).
  static int cycles_wanted() {
    const char* from_env = std::getenv("DORMANT_IT_CYCLES");
    return from_env != nullptr ? std::atoi(from_env) : 50;
  }
  // Cycle `cycle` of a start/stop test: a continuous start with `profiler_configs`, its stop and
  // the audit after it, each within 30 s. Call it under ASSERT_NO_FATAL_FAILURE.
  void start_and_stop(int cycle, const json& profiler_configs, int frequency) {
    std::string start =
        request("start", {{"continuous", true},
                          {"duration", 60},
                          {"frequency", frequency},
                          {"additional_args", {{"profiler_configs", profiler_configs}}}});
    ASSERT_TRUE(command_reaches(start, "completed", 30s))
        << "cycle " << cycle << ": " << command_status(start) << "\n"
        << agent_log();
    std::string stop = request("stop", {{"stop_level", "host"}});
    ASSERT_TRUE(command_reaches(stop, "completed", 30s)) << "cycle " << cycle << "\n"
                                                         << agent_log();
    auto audits = [&] { return log_count("back to idle:") + log_count("teardown audit:"); };
    ASSERT_TRUE(eventually([&] { return audits() > cycle; }, 30s))
        << "cycle " << cycle << ": no audit after the stop\n"
        << agent_log();
  }

  fs::path root_;
  std::string hostname_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Subprocess> agent_;
};

}  // namespace dormant::testing
