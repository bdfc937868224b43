// dormant-agent in heartbeat mode against a real dormant-server on loopback TLS, with real perf
// (root): the whole flow by curl, repeated start/stop with the teardown audit, and faults.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "heartbeat_fixture.h"
#include "server_process.h"
#include "tests/support/eventually.h"
#include "tests/support/tmpfs_mount.h"
#include "workload.h"

#include "common/atomic_file.h"
#include "common/procfs.h"
#include "common/subprocess.h"
#include "profile/collapsed.h"
#include "server/http/http_server.h"

namespace dormant::testing {
namespace {

class HeartbeatAgentTest : public HeartbeatFixture {
 protected:
  void run_cycles(const std::string& profiler);
};

// A host command profiles the whole host (the workload is named by no pid).
TEST_F(HeartbeatAgentTest, TheFullFlowByCurlProfilesTheWholeHost) {
  start_server();
  start_agent();
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << "the agent never reported its idle baseline\n"
      << agent_log();
  EXPECT_EQ(agent_health()["state"], "idle");
  EXPECT_EQ(agent_health()["idle_baseline"]["children"], 0);
  EXPECT_FALSE(agent_health()["now"].contains("children")) << "counted at baseline and audits only";

  auto busy = spawn_workload(30);
  std::string start = request("start", {{"continuous", true}, {"duration", 3}, {"frequency", 99}});
  ASSERT_FALSE(start.empty());
  ASSERT_TRUE(command_reaches(start, "completed")) << command_status(start) << "\n" << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 60s))
      << "no profile reached the server\n"
      << agent_log();
  ASSERT_TRUE(fs::exists(root_ / "out" / "last_profile.col")) << agent_log();
  json profiles = server_->get("/api/profiles?service=it").json()["profiles"];
  std::string gpid = std::to_string(profiles[0]["gpid"].get<int64_t>());
  HttpReply collapsed = server_->get("/api/profiles/" + gpid + "/collapsed");
  ASSERT_EQ(collapsed.status, 200);
  auto profile = profile::read_collapsed(collapsed.body);
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  uint64_t workload = 0;
  profile->stacks.for_each([&](const profile::StackView& stack) {
    if (stack.comm == "known_ratio") workload += stack.count;
  });
  EXPECT_GT(workload, 0u) << "the workload is not in the uploaded profile";
  EXPECT_EQ(agent_health()["state"], "running");
  EXPECT_EQ(agent_health()["profilers"]["ebpf"]["available"], true)
      << "auto chooses eBPF where it loads\n"
      << agent_health().dump();

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(back_to_idle()) << agent_log();
  json audit = agent_health()["last_teardown_audit"];
  EXPECT_EQ(audit["clean"], true) << audit.dump();
  EXPECT_EQ(audit["after"]["children"], 0);
  EXPECT_EQ(log_count("session " + start + ": starting"), 1)
      << "the command was re-sent every second; it must run once";
  stop_agent();
}

// A module that cannot be loaded fails the start with the loader's words; the agent stays idle,
// healthy and heartbeating, and a later start with nothing changed fails the same way.
TEST_F(HeartbeatAgentTest, AProfilerModuleThatCannotLoadFailsTheStartAndTheAgentStaysIdle) {
  start_server();
  auto args = agent_args(server_->port());
  args.insert(args.end(),
              {"--profiler-module", (root_ / "missing" / "libdormant_profilers.so").string()});
  start_agent(args);
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string start = request("start", {{"duration", 5}});
    ASSERT_TRUE(command_reaches(start, "failed", 30s)) << agent_log();
    json command = server_->get("/api/commands/" + start).json();
    std::string error =
        command["error_message"].is_string() ? command["error_message"].get<std::string>() : "";
    EXPECT_NE(error.find("cannot open shared object file"), std::string::npos) << command.dump();
  }
  EXPECT_TRUE(back_to_idle()) << agent_log();
  json health = agent_health();
  EXPECT_EQ(health["state"], "idle");
  EXPECT_EQ(health["last_teardown_audit"]["clean"], true) << health.dump();
  EXPECT_EQ(health["heartbeat"]["consecutive_failures"], 0);
  stop_agent();
}

TEST_F(HeartbeatAgentTest, ServerAwayAtStartThenKilledMidSessionLosesNoProfile) {
  // Reserve a port: the server that will answer on it is not up yet.
  start_server();
  uint16_t port = server_->port();
  server_->stop();
  start_agent(agent_args(port));
  ASSERT_TRUE(eventually([&] { return log_count("heartbeat failed") > 0; }, 30s)) << agent_log();
  ::usleep(3000000);
  EXPECT_EQ(log_count(" warning [dormant]"), 1)
      << "one warning for the outage, not one per attempt\n"
      << agent_log();
  start_server(port);
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 60s))
      << "the agent did not come back by itself\n"
      << agent_log();

  auto busy = spawn_workload(40);
  std::string start = request("start", {{"continuous", true}, {"duration", 2}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 60s)) << agent_log();
  server_->kill();  // mid-session: the profiles of the next snapshots go to the spool
  ASSERT_TRUE(eventually([&] { return log_count("profile upload failed") > 0; }, 60s))
      << agent_log();
  ::usleep(3000000);
  int written = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "out")) {
    written += entry.path().extension() == ".col" && !fs::is_symlink(entry.path());
  }
  start_server(port);
  ASSERT_TRUE(eventually([&] { return static_cast<int>(server_profiles()) >= written; }, 90s))
      << "spooled profiles were lost: " << server_profiles() << " of " << written << "\n"
      << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(back_to_idle()) << agent_log();
  stop_agent();
}

// perf record outlives its agent's SIGKILL only until PR_SET_PDEATHSIG kills it.
bool perf_gone(const fs::path& work) {
  return eventually(
      [&] {
        auto children =
            run_command({"pgrep", "-f", "perf record.*" + work.string()}, deadline_after(10s));
        return children.ok() && children->status.code == 1;  // none left
      },
      30s);
}

TEST_F(HeartbeatAgentTest, AnAgentKilledMidSessionNeverRerunsAOneShotAndReportsItFailed) {
  start_server();
  start_agent();
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 30s)) << agent_log();
  std::string start =
      request("start", {{"continuous", false}, {"duration", 30}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ::kill(agent_->pid(), SIGKILL);
  (void)agent_->wait(deadline_after(30s));
  agent_.reset();
  EXPECT_TRUE(perf_gone(root_ / "state" / "work")) << "perf outlived the agent";
  start_agent();
  ASSERT_TRUE(command_reaches(start, "failed")) << agent_log();
  json command = server_->get("/api/commands/" + start).json();
  EXPECT_EQ(command["error_message"], "agent restarted during session");
  ::usleep(3000000);  // several heartbeats that re-send the command
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  EXPECT_EQ(agent_health()["state"], "idle");
  EXPECT_TRUE(agent_health()["resumed"].is_null());
  stop_agent();
}

// A continuous session outlives its agent: killed (a crash) or stopped by SIGTERM (a package
// upgrade), the next agent starts it again from the journal, says so in its heartbeat, and
// profiles keep coming, while the command stays completed (its one completion was sent at the
// start). After a stop command, a restart resumes nothing.
TEST_F(HeartbeatAgentTest, AContinuousSessionResumesAfterAKillAndAfterSigtermUntilStopped) {
  start_server();
  start_agent();
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 30s)) << agent_log();
  std::string start = request("start", {{"continuous", true}, {"duration", 3}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 30s)) << agent_log();
  auto restarted_and_profiling = [&](int sessions_started, const std::string& previous_agent) {
    start_agent();
    EXPECT_TRUE(eventually(
        [&] { return log_count("session " + start + ": starting") == sessions_started; }, 30s))
        << agent_log();
    // Until this agent's first heartbeat, the server shows the previous one's.
    EXPECT_TRUE(eventually(
        [&] { return agent_health()["resumed"]["previous_agent"] == previous_agent; }, 30s))
        << agent_health().dump();
    EXPECT_EQ(agent_health()["resumed"]["command_id"], start);
    EXPECT_EQ(agent_health()["running_commands"], json::array({start}));
    size_t profiles = server_profiles();
    EXPECT_TRUE(eventually([&] { return server_profiles() > profiles; }, 30s)) << agent_log();
    EXPECT_EQ(command_status(start), "completed");
  };

  ::kill(agent_->pid(), SIGKILL);
  (void)agent_->wait(deadline_after(30s));
  agent_.reset();
  ASSERT_TRUE(perf_gone(root_ / "state" / "work")) << "perf outlived the agent";
  restarted_and_profiling(2, "ended without stopping its sessions");

  stop_agent();
  EXPECT_EQ(log_count("exiting with"), 0) << "the last profile was delivered\n" << agent_log();
  restarted_and_profiling(3, "stopped its sessions and exited");

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  // No audit: this agent took no idle baseline before the session it resumed.
  ASSERT_TRUE(eventually([&] { return agent_health()["state"] == "idle"; }, 30s)) << agent_log();
  stop_agent();
  start_agent();
  // The server shows the previous agent's last heartbeat (resumed, idle) until this one's.
  EXPECT_TRUE(eventually([&] { return agent_health()["resumed"].is_null(); }, 30s)) << agent_log();
  ::usleep(2'000'000);
  EXPECT_EQ(agent_health()["state"], "idle");
  EXPECT_EQ(log_count("resuming the continuous session"), 2) << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 3) << agent_log();
  EXPECT_EQ(command_status(start), "completed");
  stop_agent();
}

// SIGHUP mid-session, as a fleet rotating its certificates and tokens would send it: a CA bundle
// that is not one is refused whole, saying why, and the agent goes on as it was; then a new log
// level (in --config), token file and CA bundle (old and new CA) take effect, shown by a server
// restarted with only the new token and a certificate of the new CA, which the agent reaches
// again. The session runs on throughout.
TEST_F(HeartbeatAgentTest, SighupReloadsLogLevelTokenAndCaWithoutEndingTheSession) {
  auto write_secret = [](const fs::path& path, const std::string& text) {
    ASSERT_TRUE(write_file_atomically(path, text, 0600).ok());
  };
  // The server takes both tokens while the fleet moves from one to the other.
  write_secret(root_ / "tokens", std::string(kToken) + "\nagent-token-a\nagent-token-b\n");
  ASSERT_NO_FATAL_FAILURE(start_server());
  uint16_t port = server_->port();
  fs::copy_file(server_->cert("ca.pem"), root_ / "agent-ca.pem");
  write_secret(root_ / "agent-token", "agent-token-a\n");
  write_secret(root_ / "agent.conf", "log-level = info\n");
  std::vector<std::string> args;
  for (const std::string& arg : agent_args(port, "1", "info")) {
    if (arg == token_file().string() || arg == "--token-file" || arg == "--log-level" ||
        arg == "info") {
      continue;
    }
    args.push_back(arg == (root_ / "certs" / "ca.pem").string() ? (root_ / "agent-ca.pem").string()
                                                                : arg);
  }
  args.insert(args.end(), {"--token-file", (root_ / "agent-token").string(), "--config",
                           (root_ / "agent.conf").string()});
  start_agent(args);
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  std::string start = request("start", {{"continuous", true}, {"duration", 3}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  EXPECT_EQ(log_count("completion of command"), 0) << "a debug line at level info";

  write_secret(root_ / "agent-ca.pem", "-----BEGIN CERTIFICATE-----\nnot one\n");
  ::kill(agent_->pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return agent_health()["last_reload"].is_object(); }, 30s));
  json refused = agent_health()["last_reload"];
  EXPECT_EQ(refused["applied"], false);
  EXPECT_NE(refused["error"].get<std::string>().find("agent-ca.pem"), std::string::npos)
      << refused.dump();
  EXPECT_EQ(log_count("SIGHUP: the configuration is not reloaded"), 1) << agent_log();
  size_t profiles = server_profiles();
  EXPECT_TRUE(eventually([&] { return server_profiles() > profiles; }, 30s)) << agent_log();

  // The rotation: a new CA beside the old one in the bundle (the server moves to the new one
  // later), a new token, a lower log level.
  auto made = run_command({GEN_CERTS, (root_ / "certs-b").string()}, deadline_after(60s));
  ASSERT_TRUE(made.ok() && made->status.success());
  write_secret(root_ / "agent-ca.pem", read_file(server_->cert("ca.pem")).value_or("") +
                                           read_file(root_ / "certs-b" / "ca.pem").value_or(""));
  write_secret(root_ / "agent-token", "agent-token-b\n");
  write_secret(root_ / "agent.conf", "log-level = debug\n");
  ::kill(agent_->pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] { return agent_health()["last_reload"]["applied"] == true; }, 30s))
      << agent_log();
  EXPECT_EQ(log_count("SIGHUP: configuration reloaded: log level debug"), 1) << agent_log();

  server_->stop();
  fs::rename(root_ / "certs", root_ / "certs-a");
  fs::rename(root_ / "certs-b", root_ / "certs");
  write_secret(root_ / "tokens", std::string(kToken) + "\nagent-token-b\n");
  ASSERT_NO_FATAL_FAILURE(start_server(port));
  EXPECT_TRUE(
      eventually([&] { return agent_health()["heartbeat"]["consecutive_failures"] == 0; }, 30s))
      << "the agent does not reach the server with the new CA and token\n"
      << agent_log();
  profiles = server_profiles();
  EXPECT_TRUE(eventually([&] { return server_profiles() > profiles; }, 30s)) << agent_log();

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  EXPECT_TRUE(eventually([&] { return log_count("completion of command") > 0; }, 10s))
      << "no debug line after the reload to debug\n"
      << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  EXPECT_EQ(log_count("agent-token-"), 0) << "a token in the log";
  stop_agent();
}

// The wall clock set back an hour mid-session, then forward again (libfaketime, read from a file
// on every call, moves the agent's CLOCK_REALTIME only). Meanwhile the server restarts, and its
// certificate, made minutes ago, is not yet valid to the agent: uploads fail and wait in the spool.
// The session goes on (its timers are monotonic), the agent says what the clock did, every profile
// reaches the server once the clock is right, and the session's profiles are in order, each
// starting where the one before it ended.
TEST_F(HeartbeatAgentTest, AWallClockSetBackAndForwardAnHourLosesNothingAndKeepsTimesInOrder) {
  const fs::path faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
  if (!fs::exists(faketime)) GTEST_SKIP() << "libfaketime is not installed (scripts/install-deps)";
  ASSERT_TRUE(write_file_atomically(root_ / "clock", "+0\n", 0644).ok());
  start_server();
  uint16_t port = server_->port();
  // An AddressSanitizer build wants its runtime first among the preloaded libraries.
  const char* asan_options = std::getenv("ASAN_OPTIONS");
  start_agent(
      agent_args(port, "0.5"),
      {"LD_PRELOAD=" + faketime.string(), "FAKETIME_TIMESTAMP_FILE=" + (root_ / "clock").string(),
       "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1",
       std::string("ASAN_OPTIONS=") + (asan_options ? asan_options : "") +
           ":verify_asan_link_order=0"});
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  std::string start = request("start", {{"continuous", true}, {"duration", 2}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 30s)) << agent_log();

  ASSERT_TRUE(write_file_atomically(root_ / "clock", "-1h\n", 0644).ok());
  EXPECT_TRUE(eventually([&] { return log_count("the wall clock went back") > 0; }, 30s))
      << agent_log();
  auto spooled = [&] {
    int count = 0;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(root_ / "state" / "spool", error)) {
      count += entry.path().extension() == ".upload";
    }
    return count;
  };
  server_->stop();
  ASSERT_NO_FATAL_FAILURE(start_server(port));
  EXPECT_TRUE(eventually([&] { return spooled() >= 2; }, 30s))
      << "no profile waits while the certificate is not yet valid\n"
      << agent_log();
  ASSERT_TRUE(write_file_atomically(root_ / "clock", "+0\n", 0644).ok());
  EXPECT_TRUE(eventually([&] { return spooled() == 0; }, 60s)) << agent_log();

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return agent_health()["state"] == "idle"; }, 30s));
  EXPECT_TRUE(eventually([&] { return spooled() == 0; }, 30s));
  EXPECT_EQ(log_count("dropped"), 0) << agent_log();
  // Each snapshot uploaded once: none lost, none sent twice.
  EXPECT_EQ(log_count("uploaded a profile"), log_count("info [dormant] wrote ")) << agent_log();
  EXPECT_EQ(static_cast<int>(server_profiles()), log_count("uploaded a profile")) << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1);

  json profiles = server_->get("/api/profiles?service=it").json()["profiles"];
  std::sort(profiles.begin(), profiles.end(),
            [](const json& a, const json& b) { return a["gpid"] < b["gpid"]; });
  ASSERT_GE(profiles.size(), 4u);
  for (size_t i = 0; i < profiles.size(); ++i) {
    EXPECT_LE(profiles[i]["start_time"], profiles[i]["end_time"]) << profiles[i].dump();
    if (i > 0) {
      EXPECT_LE(profiles[i - 1]["end_time"], profiles[i]["start_time"])
          << profiles[i - 1].dump() << "\n"
          << profiles[i].dump();
    }
  }
  stop_agent();
}

// --state-dir on a file system that fills up, then turns read-only, mid-session: the session goes
// on, profiles that cannot be spooled are held in memory and delivered from there (also after a
// server outage meanwhile), agent_health says what fails, and all is as before once space returns
// and the file system is writable again. No profile is lost.
TEST_F(HeartbeatAgentTest, AFullThenReadOnlyStateDirKeepsTheSessionAndLosesNoProfile) {
  std::string why;
  auto state = TmpfsMount::make(root_ / "state", "1m", why);
  if (!state) GTEST_SKIP() << why;
  start_server();
  uint16_t port = server_->port();
  start_agent(agent_args(port, "0.5"));
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  std::string start = request("start", {{"continuous", true}, {"duration", 2}, {"frequency", 49}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return server_profiles() > 0; }, 30s)) << agent_log();
  auto spool_error = [&] {
    json error = agent_health()["state_dir"]["spool_error"];
    return error.is_string() ? error.get<std::string>() : std::string();
  };

  ASSERT_NO_FATAL_FAILURE(state->fill());
  ASSERT_TRUE(
      eventually([&] { return spool_error().find("No space left") != std::string::npos; }, 30s))
      << agent_log();
  server_->stop();
  ::usleep(5'000'000);  // two or three profiles wait, in memory
  ASSERT_NO_FATAL_FAILURE(start_server(port));
  EXPECT_TRUE(eventually(
      [&] {
        json held = agent_health()["spool"]["held_in_memory"];
        return held.is_object() && held["profiles"] == 0 && held["bytes"] == 0;
      },
      30s))
      << agent_health().dump() << "\n"
      << agent_log();
  fs::remove(state->filler());
  EXPECT_TRUE(eventually([&] { return spool_error().empty(); }, 30s)) << agent_log();

  ASSERT_NO_FATAL_FAILURE(state->make_read_only());
  EXPECT_TRUE(eventually(
      [&] { return spool_error().find("Read-only file system") != std::string::npos; }, 30s))
      << agent_log();
  ASSERT_NO_FATAL_FAILURE(state->make_writable());
  EXPECT_TRUE(eventually([&] { return spool_error().empty(); }, 30s)) << agent_log();

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return agent_health()["state"] == "idle"; }, 30s));
  EXPECT_TRUE(eventually([&] { return agent_health()["spool"]["profiles"] == 0; }, 30s));
  EXPECT_EQ(log_count("dropped"), 0) << agent_log();
  // Each snapshot uploaded once: none lost, none sent twice.
  EXPECT_EQ(log_count("uploaded a profile"), log_count("info [dormant] wrote ")) << agent_log();
  EXPECT_EQ(static_cast<int>(server_profiles()), log_count("uploaded a profile")) << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1);
  EXPECT_GE(log_count("cannot write the upload spool"), 2) << "once per failing spell";
  stop_agent();
}

TEST_F(HeartbeatAgentTest, ASecondAgentOnTheHostIsRefused) {
  start_server();
  start_agent();
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 30s)) << agent_log();
  auto second = run_command(agent_args(server_->port()), deadline_after(30s));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status.code, 1);
  EXPECT_NE(second->stderr_text.find("another dormant-agent runs on this host"), std::string::npos)
      << second->stderr_text;
  stop_agent();
}

// The agent whose memory can be measured: one built without AddressSanitizer, whose quarantine
// keeps freed memory resident. scripts/test builds one and names it in DORMANT_PLAIN_AGENT.
std::string plain_agent() {
  const char* path = std::getenv("DORMANT_PLAIN_AGENT");
  if (path != nullptr && *path != 0) return path;
#if defined(__SANITIZE_ADDRESS__)
  return "";
#else
  return DORMANT_AGENT;
#endif
}

// A process's private pages (USS), per mapping, from /proc/PID/smaps, in two kinds: anonymous
// ones (heap, stacks, copied-on-write data: what a leak or a fragmented heap grows) and file ones
// (code and read-only data only this process maps). Not dirty and clean: a binary just linked has
// dirty page-cache pages until they are written back, and so would seem to shrink.
struct PrivatePages {
  int64_t anon_kb = 0;
  int64_t file_kb = 0;
  std::map<std::string, int64_t> kb_by_mapping;
};

PrivatePages private_pages(pid_t pid) {
  PrivatePages pages;
  std::istringstream smaps(read_file("/proc/" + std::to_string(pid) + "/smaps").value_or(""));
  std::string line;
  std::string mapping;
  int64_t private_kb = 0;
  int64_t anon_kb = 0;
  auto add_mapping = [&] {
    int64_t anon = std::min(anon_kb, private_kb);  // shared anonymous pages (after a fork) aside
    pages.anon_kb += anon;
    pages.file_kb += private_kb - anon;
    if (!mapping.empty()) pages.kb_by_mapping[mapping] += private_kb;
    private_kb = anon_kb = 0;
  };
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (!first.ends_with(':')) {  // "start-end perms offset dev inode [path]"
      add_mapping();
      std::string perms, offset, dev, inode;
      fields >> perms >> offset >> dev >> inode;
      std::getline(fields >> std::ws, mapping);
      if (mapping.empty()) mapping = "[anonymous]";
      continue;
    }
    int64_t kb = 0;
    fields >> kb;
    if (first == "Private_Clean:" || first == "Private_Dirty:") private_kb += kb;
    if (first == "Anonymous:") anon_kb = kb;
  }
  add_mapping();
  return pages;
}

// The mappings whose private pages changed, largest change first.
std::string private_growth_by_mapping(const PrivatePages& before, const PrivatePages& after) {
  std::map<std::string, int64_t> growth;
  for (const auto& [mapping, kb] : after.kb_by_mapping) growth[mapping] += kb;
  for (const auto& [mapping, kb] : before.kb_by_mapping) growth[mapping] -= kb;
  std::vector<std::pair<int64_t, std::string>> changed;
  for (const auto& [mapping, kb] : growth) {
    if (kb != 0) changed.emplace_back(kb, mapping);
  }
  std::sort(changed.begin(), changed.end(), std::greater<>());
  std::ostringstream out;
  for (const auto& [kb, mapping] : changed) out << "  " << kb << " kB " << mapping << "\n";
  return out.str();
}

// Start/stop cycles (cycles_wanted()) of one CPU profiler ("perf" or "ebpf", chosen by the
// command's profiler_configs, as Studio sends them): the audit after each stop must find the
// process exactly as it was at idle (fds, children, threads, BPF objects, mapped files), and at the
// end, with the agent built as it ships, its private pages (USS) are near the first idle baseline:
// anonymous ones within kAnonSlackKb, file ones (code a session ran first) within kFileSlackKb.
// File pages count as private only while no other process on the host maps them, so their figure
// moves with what else runs (in CI, +188 kB once).
void HeartbeatAgentTest::run_cycles(const std::string& profiler) {
  // The figures printed below go in the notes.
  constexpr int64_t kAnonSlackKb = 256;
  constexpr int64_t kFileSlackKb = 512;
  const int kCycles = cycles_wanted();
  std::string agent = plain_agent();
  if (agent.empty()) {
    std::cout << "USS is not checked: this is an AddressSanitizer build and DORMANT_PLAIN_AGENT "
                 "names no agent built without it\n";
  }
  start_server();
  auto args = agent_args(server_->port(), "0.2", "info");
  if (!agent.empty()) args[0] = agent;
  start_agent(args);
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  json baseline = agent_health()["idle_baseline"];
  PrivatePages idle = private_pages(agent_->pid());
  json profiler_configs = {{"ebpf", profiler == "ebpf" ? "enabled" : "disabled"}};
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    ASSERT_NO_FATAL_FAILURE(start_and_stop(cycle, profiler_configs, 11));
  }
  EXPECT_EQ(log_count("teardown audit:"), 0) << "the audit found leaks\n" << agent_log();
  EXPECT_EQ(log_count("back to idle:"), kCycles);
  EXPECT_EQ(log_count(profiler == "ebpf" ? "ebpf: sampling" : "perf: recording"), kCycles);
  ASSERT_TRUE(eventually([&] { return agent_health()["state"] == "idle"; }, 30s));
  json after = agent_health()["last_teardown_audit"]["after"];
  for (const char* key : {"open_fds", "children", "threads", "bpf_objects"}) {
    EXPECT_EQ(after[key], baseline[key]) << key;
  }
  // The end: the connections for the last upload and completion have closed (they are let go
  // after 5 s idle), so the agent holds again only what it held at the baseline.
  auto sockets = [&] {
    auto fds = procfs::open_fds(agent_->pid());
    return fds ? std::count_if(fds->begin(), fds->end(),
                               [](const auto& fd) { return fd.target.starts_with("socket:"); })
               : -1;
  };
  EXPECT_TRUE(eventually([&] { return sockets() <= baseline["sockets"].get<int>(); }, 30s))
      << sockets() << " sockets, " << baseline["sockets"] << " at the baseline";
  // The profiler module and the libraries it brought are gone.
  auto mapped = procfs::mapped_files(agent_->pid());
  ASSERT_TRUE(mapped.ok());
  for (const auto& file : *mapped) {
    for (const char* gone : {"libdormant_profilers", "libbpf", "libelf"}) {
      EXPECT_EQ(file.find(gone), std::string::npos) << file << " is still mapped";
    }
  }
  // The heap is trimmed just after the close.
  PrivatePages now;
  auto within_slack = [&] {
    now = private_pages(agent_->pid());
    return now.anon_kb - idle.anon_kb <= kAnonSlackKb && now.file_kb - idle.file_kb <= kFileSlackKb;
  };
  if (!agent.empty()) eventually(within_slack, 5s);
  within_slack();
  Result<procfs::MemoryUsage> memory = procfs::memory_usage(agent_->pid());
  ASSERT_TRUE(memory.ok()) << memory.error().message();
  std::cout << "after " << kCycles << " " << profiler << " cycles: USS " << memory->uss_kb
            << " kB, " << static_cast<int64_t>(memory->uss_kb) - baseline["uss_kb"].get<int64_t>()
            << " kB above the first idle baseline (anonymous " << now.anon_kb - idle.anon_kb
            << " kB, file " << now.file_kb - idle.file_kb << " kB); RssAnon " << memory->rss_anon_kb
            << " kB (baseline " << baseline["rss_anon_kb"] << "), PSS " << memory->pss_kb
            << " kB (baseline " << baseline["pss_kb"] << "), VmRSS " << memory->rss_kb
            << " kB (baseline " << baseline["rss_kb"] << ")\n"
            << "private pages by mapping, against the baseline:\n"
            << private_growth_by_mapping(idle, now);
  if (!agent.empty()) {
    EXPECT_LE(now.anon_kb - idle.anon_kb, kAnonSlackKb) << baseline.dump();
    EXPECT_LE(now.file_kb - idle.file_kb, kFileSlackKb) << baseline.dump();
    // The agent's own audit compares memory once those connections have closed.
    EXPECT_TRUE(eventually(
        [&] { return agent_health()["last_teardown_audit"]["memory_compared"] == true; }, 10s))
        << agent_log();
    EXPECT_EQ(agent_health()["last_teardown_audit"]["clean"], true)
        << agent_health()["last_teardown_audit"].dump();
  }
  stop_agent();
}

TEST_F(HeartbeatAgentTest, StartStopCyclesReturnToTheIdleBaseline) { run_cycles("perf"); }

TEST_F(HeartbeatAgentTest, EbpfCyclesLeaveNoBpfObjectAndACleanAudit) { run_cycles("ebpf"); }

// perf record outlives SIGTERM, so the profiler's stop() would wait out its 2 s grace, far past the
// 0.2 s deadline: its processes are killed at the deadline, the profiler is freed, and the agent
// is back to its idle baseline with the reason told. (Without the kill, stop() would return only
// after the 1 s that teardown waits past the deadline, and be abandoned.)
TEST_F(HeartbeatAgentTest, AProfilerWhoseStopHangsIsKilledAndReleased) {
  start_server();
  auto args = agent_args(server_->port());
  args.insert(args.end(), {"--system-profiler", "perf", "--perf-path", FAKE_PERF,
                           "--profiler-stop-timeout", "0.2"});
  start_agent(args, {"FAKE_PERF_RECORD=deaf"});
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  json baseline = agent_health()["idle_baseline"];
  std::string start = request("start", {{"continuous", true}, {"duration", 60}, {"frequency", 11}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  ASSERT_TRUE(back_to_idle()) << agent_log();

  json teardown = agent_health()["last_teardown"];
  ASSERT_EQ(teardown["problems"].size(), 1u) << teardown.dump();
  EXPECT_EQ(teardown["problems"][0],
            "perf: stop() passed its 200 ms deadline; its processes were killed");
  json audit = agent_health()["last_teardown_audit"];
  EXPECT_EQ(audit["clean"], true) << audit.dump() << "\n" << agent_log();
  for (const char* key : {"open_fds", "children", "threads"}) {
    EXPECT_EQ(audit["after"][key], baseline[key]) << key;
  }
  auto left = run_command({"pgrep", "-f", "perf record.*" + (root_ / "state").string()},
                          deadline_after(10s));
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->status.code, 1) << "perf record is still running: " << left->stdout_text;
  stop_agent();
}

// perf's trial recording (which event records here?) runs once: later sessions start on the event
// the first one found. When that event fails, the events are tried again.
TEST_F(HeartbeatAgentTest, PerfTriesItsEventsOnceAndAgainOnlyWhenTheKnownOneFails) {
  start_server();
  fs::path perf_log = root_ / "perf.log";
  fs::path broken = root_ / "perf-broken";
  auto args = agent_args(server_->port(), "0.2");
  args.insert(args.end(), {"--system-profiler", "perf", "--perf-path", FAKE_PERF});
  start_agent(
      args, {"FAKE_PERF_LOG=" + perf_log.string(), "FAKE_PERF_RECORD_FAILS_IF=" + broken.string()});
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  auto trials = [&] {
    std::string log = read_file(perf_log).value_or("");
    int count = 0;
    for (size_t at = log.find("trial-"); at != std::string::npos; at = log.find("trial-", at + 1)) {
      count += log.compare(log.rfind('\n', at) + 1, 6, "record") == 0;
    }
    return count;
  };
  auto session = [&](const std::string& outcome) {
    std::string start =
        request("start", {{"continuous", true}, {"duration", 60}, {"frequency", 11}});
    EXPECT_TRUE(command_reaches(start, outcome)) << agent_log();
    std::string stop = request("stop", {{"stop_level", "host"}});
    EXPECT_TRUE(command_reaches(stop, "completed")) << agent_log();
  };
  session("completed");
  int first = trials();
  EXPECT_GE(first, 1);
  session("completed");
  EXPECT_EQ(trials(), first) << "the second session starts on the event the first one found";

  ASSERT_TRUE(write_file_atomically(broken, "", 0600).ok());
  session("failed");
  EXPECT_EQ(log_count("no longer records"), 1) << agent_log();
  EXPECT_GT(trials(), first) << "the known event failed: the events are tried again";
  stop_agent();
}

// profiler_configs.perf.events chooses what perf samples on: Studio's default (cpu-cycles) records
// cycles, or cpu-clock on a host without hardware counters; an event the host cannot count fails
// the start saying so, and the agent stays idle.
TEST_F(HeartbeatAgentTest, PerfRecordsTheCommandsEventOrFailsSayingWhyNot) {
  start_server();
  start_agent(agent_args(server_->port(), "0.2"));
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  auto session = [&](const json& events) {
    json configs = {{"ebpf", "disabled"},
                    {"perf", {{"mode", "enabled_restricted"}, {"events", events}}}};
    std::string start = request("start", {{"continuous", true},
                                          {"duration", 60},
                                          {"additional_args", {{"profiler_configs", configs}}}});
    eventually(
        [&] {
          std::string status = command_status(start);
          return status == "completed" || status == "failed";
        },
        30s);
    std::string status = command_status(start);
    request("stop", {{"stop_level", "host"}});
    EXPECT_TRUE(back_to_idle()) << agent_log();
    return std::pair{status, server_->get("/api/commands/" + start).json()};
  };
  auto host_counts = [](const std::string& sysfs_name) {
    std::error_code error;
    for (const auto& device : fs::directory_iterator("/sys/bus/event_source/devices", error)) {
      if (fs::exists(device.path() / "events" / sysfs_name, error)) return true;
    }
    return false;
  };
  auto [status, command] = session({"cpu-cycles"});
  EXPECT_EQ(status, "completed") << command.dump() << agent_log();
  EXPECT_EQ(
      log_count(host_counts("cpu-cycles") ? "perf: recording cycles" : "perf: recording cpu-clock"),
      1)
      << agent_log();

  if (host_counts("stalled-cycles-backend")) {
    std::cout << "this host counts stalled-cycles-backend: the refusal is not tried\n";
  } else {
    std::tie(status, command) = session({"stalled-cycles-backend"});
    EXPECT_EQ(status, "failed") << command.dump();
    std::string error_message = command["error_message"].is_string()
                                    ? command["error_message"].get<std::string>()
                                    : command.dump();
    EXPECT_NE(error_message.find("perf cannot count stalled-cycles-backend on this host"),
              std::string::npos)
        << error_message;
  }
  EXPECT_EQ(agent_health()["state"], "idle");
  EXPECT_EQ(agent_health()["last_teardown_audit"]["clean"], true) << agent_health().dump();
  stop_agent();
}

// The daemon runs with glibc's thread caches off (agent/allocator_settings.h) by starting itself
// again with GLIBC_TUNABLES: the same pid and name, the caller's own tunables kept after ours, and
// its children (perf here) get the environment the agent was launched with.
TEST_F(HeartbeatAgentTest, TheDaemonRunsWithoutGlibcCachesAndItsChildrenAsLaunched) {
  start_server();
  fs::path perf_environment = root_ / "perf.env";
  auto args = agent_args(server_->port(), "0.2");
  args.insert(args.end(), {"--system-profiler", "perf", "--perf-path", FAKE_PERF});
  start_agent(args, {"GLIBC_TUNABLES=glibc.malloc.perturb=0",
                     "FAKE_PERF_ENV_LOG=" + perf_environment.string()});
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  fs::path process = fs::path("/proc") / std::to_string(agent_->pid());
  // What the agent started itself again with (glibc's parser may cut the value at its colons).
  std::string launched = read_file(process / "environ").value_or("");
  for (const char* setting : {"GLIBC_TUNABLES=glibc.malloc.tcache_count=0",
                              "glibc.pthread.stack_cache_size=0", "glibc.malloc.perturb=0"}) {
    EXPECT_NE(launched.find(setting), std::string::npos) << setting << " in " << launched;
  }
  EXPECT_EQ(read_file(process / "comm").value_or(""), "dormant-agent\n");

  std::string start = request("start", {{"continuous", true}, {"duration", 60}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  std::string perf = read_file(perf_environment).value_or("");
  ASSERT_FALSE(perf.empty()) << "perf never ran\n" << agent_log();
  EXPECT_NE(perf.find("GLIBC_TUNABLES=glibc.malloc.perturb=0\n"), std::string::npos) << perf;
  EXPECT_EQ(perf.find("tcache_count"), std::string::npos) << perf;
  EXPECT_EQ(perf.find("DORMANT_CALLER_GLIBC_TUNABLES"), std::string::npos) << perf;
  EXPECT_EQ(log_count("running with glibc's default caches"), 0) << agent_log();
  stop_agent();
}

// The server re-sends the current command in every answer; the agent runs it once.
TEST_F(HeartbeatAgentTest, TheSameCommandDeliveredAHundredTimesRunsOnce) {
  start_server();
  start_agent(agent_args(server_->port(), "0.1", "trace"));
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 30s)) << agent_log();
  std::string start =
      request("start", {{"continuous", false}, {"duration", 60}, {"frequency", 11}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  ASSERT_TRUE(eventually([&] { return log_count("command " + start + " again") >= 100; }, 90s))
      << "the server did not re-send the command 100 times\n"
      << agent_log();
  EXPECT_EQ(log_count("session " + start + ": starting"), 1) << agent_log();
  EXPECT_EQ(log_count("command " + start + ": {"), 1) << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  json command = server_->get("/api/commands/" + start).json();
  EXPECT_EQ(command["status"], "completed") << command.dump();
  stop_agent();
}

// Stand-ins that take the server's port while it is away: each fails the agent's heartbeats in
// its own way; then the real server comes back on the same port.
class FaultyServer {
 public:
  enum class Fault { kStatus500, kGarbageJson, kSilent, kWrongCa, kWrongHostName };

  static std::unique_ptr<FaultyServer> start(Fault fault, uint16_t port, const fs::path& certs) {
    auto server = std::unique_ptr<FaultyServer>(new FaultyServer());
    if (fault == Fault::kSilent) {
      server->silent_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      int on = 1;
      ::setsockopt(server->silent_.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(port);
      if (::bind(server->silent_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
              0 ||
          ::listen(server->silent_.get(), 64) != 0) {
        return nullptr;
      }
      return server;
    }
    std::string pem = "server";
    if (fault == Fault::kWrongCa) pem = "other/server";
    if (fault == Fault::kWrongHostName) pem = "wrong-name";
    auto tls = server::http::make_tls_context((certs / (pem + ".pem")).string(),
                                              (certs / (pem + ".key")).string(), "");
    if (!tls) return nullptr;
    server::http::HttpServerOptions options;
    options.port = port;
    options.tls = *tls;
    auto http = server::http::HttpServer::start(
        options, [fault](const server::http::Request&, const std::string&) {
          if (fault == Fault::kGarbageJson) {
            return server::http::json_response(boost::beast::http::status::ok, "{\"success\": tr");
          }
          return server::http::json_response(boost::beast::http::status::internal_server_error,
                                             "{\"detail\": \"internal error\"}");
        });
    if (!http) return nullptr;
    server->http_ = std::move(*http);
    return server;
  }

 private:
  FaultyServer() = default;
  std::unique_ptr<server::http::HttpServer> http_;
  UniqueFd silent_;
};

TEST_F(HeartbeatAgentTest, FaultsOnTheServerSideNeverStopTheAgent) {
  start_server();
  fs::path certs = root_ / "certs";
  auto other_ca = run_command({GEN_CERTS, (certs / "other").string()}, deadline_after(60s));
  ASSERT_TRUE(other_ca.ok() && other_ca->status.success());
  // Signed by the right CA, for a name that is not the one the agent connects to.
  auto wrong_name = run_command(
      {"bash", "-c",
       "cd '" + certs.string() +
           "' && openssl req -newkey rsa:2048 -nodes -subj /CN=elsewhere.example "
           "-keyout wrong-name.key -out wrong-name.csr 2>/dev/null && "
           "printf 'subjectAltName=DNS:elsewhere.example\\n' > wrong-name.ext && "
           "openssl x509 -req -in wrong-name.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
           "-days 2 -extfile wrong-name.ext -out wrong-name.pem 2>/dev/null"},
      deadline_after(60s));
  ASSERT_TRUE(wrong_name.ok() && wrong_name->status.success());

  uint16_t port = server_->port();
  start_agent(agent_args(port, "0.2"));
  ASSERT_TRUE(eventually([&] { return agent_health().is_object(); }, 30s)) << agent_log();

  struct Case {
    FaultyServer::Fault fault;
    const char* name;
    const char* error;  // what the agent's log says of it
  };
  using Fault = FaultyServer::Fault;
  for (const Case& fault :
       {Case{Fault::kStatus500, "500s", "500"}, Case{Fault::kGarbageJson, "garbage JSON", "JSON"},
        Case{Fault::kSilent, "a server that never answers", "timed out"},
        Case{Fault::kWrongCa, "a wrong CA", "give the CA that signed it with --tls-ca-bundle"},
        Case{Fault::kWrongHostName, "a wrong host name", "does not name the host in the URL"}}) {
    SCOPED_TRACE(fault.name);
    int failures_before = log_count("heartbeat failed");
    int recoveries_before = log_count("heartbeat: the server answers again");
    server_->stop();
    auto faulty = FaultyServer::start(fault.fault, port, certs);
    ASSERT_TRUE(faulty) << "cannot start the stand-in for " << fault.name;
    ASSERT_TRUE(
        eventually([&] { return log_count("heartbeat failed") >= failures_before + 2; }, 60s))
        << agent_log();
    std::string log = agent_log();
    std::string failures = log.substr(log.rfind("heartbeat failed"));
    EXPECT_NE(failures.find(fault.error), std::string::npos) << failures;
    ASSERT_FALSE(agent_->try_wait().has_value()) << "the agent exited\n" << agent_log();
    faulty.reset();
    ASSERT_TRUE(server_->start({}, port)) << server_->log();
    ASSERT_TRUE(eventually(
        [&] { return log_count("heartbeat: the server answers again") > recoveries_before; }, 60s))
        << "no recovery from " << fault.name << "\n"
        << agent_log();
  }
  // Recovered for real: a command still runs.
  std::string start = request("start", {{"continuous", true}, {"duration", 60}, {"frequency", 11}});
  ASSERT_TRUE(command_reaches(start, "completed")) << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed")) << agent_log();
  stop_agent();
}

}  // namespace
}  // namespace dormant::testing
