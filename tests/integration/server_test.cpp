// dormant-server as people, scripts and agents use it: the real binary on loopback TLS, curl as
// the client, request bodies as gProfiler's agent and Studio send them (docs/protocol.md).
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "server_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/postgres_cluster.h"
#include "tests/support/tmpfs_mount.h"

#include "common/atomic_file.h"

namespace dormant::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServerTest : public ServerFixture {
 protected:
  ServerTest() : ServerFixture("dormant-server-it-") {}

  // A heartbeat exactly as gProfiler's HeartbeatClient sends it (docs/protocol.md).
  static json agent_heartbeat(const std::string& hostname, const std::string& service = "web") {
    json body = json::parse(R"({"ip_address": "10.0.0.7", "last_command_id": null,
      "status": "active", "timestamp": "2026-11-22T10:00:00.123456",
      "received_command_ids": [], "executed_command_ids": [],
      "perf_supported_events": ["cycles"], "agent_version": "1.53.1",
      "run_mode": "standalone_executable", "namespace": null, "pod_name": null,
      "containers": []})");
    body["hostname"] = hostname;
    body["service_name"] = service;
    return body;
  }

  json beat(const std::string& hostname, const std::string& service = "web") {
    HttpReply reply =
        server_->post_json("/api/metrics/heartbeat", agent_heartbeat(hostname, service));
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.json();
  }

  // What a plain-HTTP server on `address`, started under `launcher` (prlimit, say), logs until
  // it listens; it is stopped then.
  std::string start_up_log(const std::string& address, std::vector<std::string> launcher = {}) {
    std::ofstream(root_ / "tokens") << kToken << "\n";
    SpawnOptions options;
    options.argv = std::move(launcher);
    options.argv.insert(options.argv.end(), {DORMANT_SERVER, "--insecure-http", "--listen", address,
                                             "--port", "0", "--data-dir", (root_ / "data").string(),
                                             "--tokens-file", (root_ / "tokens").string()});
    options.stderr_to = Redirect::file(root_ / "start-up.log");
    auto server = Subprocess::spawn(options);
    EXPECT_TRUE(server.ok()) << server.error().message();
    if (!server) return "";
    auto listening = (*server)->next_stdout_line(deadline_after(std::chrono::seconds(30)));
    EXPECT_TRUE(listening.ok() && *listening) << read_file(root_ / "start-up.log").value_or("");
    (*server)->terminate(std::chrono::seconds(10));
    return read_file(root_ / "start-up.log").value_or("");
  }

  json request(const json& body, int expected_status = 200) {
    HttpReply reply = server_->post_json("/api/metrics/profile_request", body);
    EXPECT_EQ(reply.status, expected_status) << reply.body;
    return reply.json();
  }

  json complete(const std::string& command_id, const std::string& hostname,
                const std::string& status = "completed") {
    HttpReply reply =
        server_->post_json("/api/metrics/command_completion", {{"command_id", command_id},
                                                               {"hostname", hostname},
                                                               {"status", status},
                                                               {"execution_time", 0},
                                                               {"error_message", nullptr},
                                                               {"results_path", nullptr}});
    EXPECT_EQ(reply.status, 200) << reply.body;
    return reply.json();
  }

  // A heartbeat of some 100 kB, over the 64 kB body limit these tests give the server.
  fs::path oversized_heartbeat() {
    fs::path big = root_ / "big";
    std::ofstream(big) << "{\"hostname\":\"" << std::string(100000, 'x') << "\"}";
    return big;
  }

  HttpReply upload(const std::string& body, std::vector<std::string> extra = {}) {
    fs::path file = root_ / "upload.gz";
    std::ofstream(file, std::ios::binary) << body;
    std::vector<std::string> args = {"-X",
                                     "POST",
                                     "-H",
                                     std::string("GPROFILER-API-KEY: ") + kToken,
                                     "-H",
                                     "GPROFILER-SERVICE-NAME: web",
                                     "-H",
                                     "Content-Encoding: gzip",
                                     "-H",
                                     "Content-Type: application/json",
                                     "--data-binary",
                                     "@" + file.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(server_->url("/api/v2/profiles?service=web&hostname=web-01"));
    return server_->curl(args, /*with_token=*/false);
  }
};

TEST_F(ServerTest, HealthChecksNeedNoToken) {
  start();
  for (const char* path : {"/api/v1/health_check", "/api/v2/health_check"}) {
    HttpReply reply = server_->curl({server_->url(path)}, /*with_token=*/false);
    EXPECT_EQ(reply.status, 200) << path << ": " << reply.body;
  }
}

// Studio's own curl examples, with request_type and target_hosts (their fields: docs/protocol.md).
TEST_F(ServerTest, StudiosOwnCurlExamplesWork) {
  start();
  json started = request(json::parse(R"({"service_name":"web","request_type":"start",
      "continuous":false,"duration":120,"frequency":11,
      "target_hosts":{"web-01":null,"web-02":[1234]},
      "additional_args":{"profiler_configs":{"async_profiler":{"enabled":true,"time":"wall"}}}})"));
  EXPECT_EQ(started["success"], true);
  EXPECT_EQ(started["command_ids"].size(), 2u);
  EXPECT_TRUE(started["request_id"].is_string());
  EXPECT_TRUE(started["estimated_completion_time"].is_string());

  json command = beat("web-02");
  EXPECT_EQ(command["profiling_command"]["command_type"], "start");
  json config = command["profiling_command"]["combined_config"];
  EXPECT_EQ(config["pids"], json::array({1234}));
  EXPECT_EQ(config["duration"], 120);
  EXPECT_EQ(config["profiler_configs"]["async_profiler"]["time"], "wall") << config;

  json stopped = request(json::parse(
      R"({"service_name":"web","request_type":"stop","stop_level":"host","target_hosts":{"web-01":null}})"));
  EXPECT_EQ(stopped["success"], true);
  EXPECT_EQ(beat("web-01")["profiling_command"]["command_type"], "stop");
}

TEST_F(ServerTest, RequestDeliveryResendCompletionAndStop) {
  start();
  EXPECT_EQ(beat("web-01")["profiling_command"], nullptr) << "no command before any request";
  json started = request({{"service_name", "web"},
                          {"request_type", "start"},
                          {"continuous", true},
                          {"target_hosts", {{"web-01", nullptr}}}});
  std::string command_id = started["command_ids"][0];

  json first = beat("web-01");
  EXPECT_EQ(first["command_id"], command_id);
  EXPECT_EQ(first["profiling_command"]["combined_config"]["continuous"], true);
  EXPECT_EQ(first["profiling_command"]["combined_config"]["frequency"], 11);
  json again = beat("web-01");
  EXPECT_EQ(again["command_id"], command_id) << "the current command is re-sent every time";

  json command = server_->get("/api/commands/" + command_id).json();
  EXPECT_EQ(command["status"], "sent");
  EXPECT_TRUE(command["sent_at"].is_string());

  EXPECT_EQ(complete(command_id, "web-01")["success"], true);
  EXPECT_EQ(complete(command_id, "web-01")["success"], false) << "the first report stands";
  EXPECT_EQ(server_->get("/api/commands/" + command_id).json()["status"], "completed");
  json died = complete(command_id, "web-01", "failed");
  EXPECT_EQ(died["success"], true) << "a started session that fails later is news";
  EXPECT_EQ(server_->get("/api/commands/" + command_id).json()["status"], "failed");
  EXPECT_EQ(complete(command_id, "web-01")["success"], false) << "and the failure stands";

  json stopped = request({{"service_name", "web"},
                          {"request_type", "stop"},
                          {"stop_level", "host"},
                          {"target_hosts", {{"web-01", nullptr}}}});
  json stop = beat("web-01");
  EXPECT_EQ(stop["command_id"], stopped["command_ids"][0]);
  EXPECT_EQ(stop["profiling_command"]["combined_config"], json({{"stop_level", "host"}}));

  json hosts = server_->get("/api/hosts?service=web").json()["hosts"];
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0]["hostname"], "web-01");
  EXPECT_EQ(hosts[0]["agent_version"], "1.53.1");
  EXPECT_EQ(hosts[0]["current_command"]["command_type"], "stop");
  json history = server_->get("/api/commands?hostname=web-01").json()["commands"];
  EXPECT_EQ(history.size(), 2u) << "the start stays in the history";
  json original = server_->get("/api/requests/" + std::string(started["request_id"])).json();
  EXPECT_EQ(original["request_type"], "start");
}

TEST_F(ServerTest, StartsMergeAndProcessStopsSubtract) {
  start();
  auto start_pids = [&](json pids, int frequency) {
    return request({{"service_name", "web"},
                    {"request_type", "start"},
                    {"frequency", frequency},
                    {"target_hosts", {{"web-01", pids}}}});
  };
  start_pids({1, 2}, 11);
  start_pids({3}, 99);
  json merged = beat("web-01")["profiling_command"]["combined_config"];
  EXPECT_EQ(merged["pids"], json::array({1, 2, 3}));
  EXPECT_EQ(merged["frequency"], 99);

  request({{"service_name", "web"},
           {"request_type", "stop"},
           {"stop_level", "process"},
           {"target_hosts", {{"web-01", {2}}}}});
  json reduced = beat("web-01")["profiling_command"];
  EXPECT_EQ(reduced["command_type"], "start") << "a start with the pids that are left";
  EXPECT_EQ(reduced["combined_config"]["pids"], json::array({1, 3}));

  request({{"service_name", "web"},
           {"request_type", "stop"},
           {"stop_level", "process"},
           {"target_hosts", {{"web-01", {1, 3}}}}});
  json last = beat("web-01")["profiling_command"];
  EXPECT_EQ(last["command_type"], "stop");
  EXPECT_EQ(last["combined_config"]["stop_level"], "host") << "no pid left: a host stop";
}

TEST_F(ServerTest, DryRunChangesNothing) {
  start();
  json dry = request({{"service_name", "web"},
                      {"request_type", "start"},
                      {"dry_run", true},
                      {"target_hosts", {{"web-01", nullptr}}}});
  EXPECT_EQ(dry["success"], true);
  EXPECT_EQ(dry["request_id"], nullptr);
  EXPECT_EQ(dry["command_ids"], json::array());
  EXPECT_EQ(beat("web-01")["profiling_command"], nullptr);
}

TEST_F(ServerTest, UploadedProfilesAreStoredListedDownloadedAndDrawn) {
  start();
  std::string collapsed =
      collapsed_profile("web-01", "0;;nginx;main;handle_request 7\n0;;nginx;main;idle 3\n");
  HttpReply uploaded = upload(gzip(upload_body("web-01", collapsed).dump()));
  ASSERT_EQ(uploaded.status, 200) << uploaded.body;
  json answer = uploaded.json();
  EXPECT_EQ(answer["message"], "ok");
  int64_t gpid = answer["gpid"];
  EXPECT_GT(gpid, 0);

  json listed = server_->get("/api/profiles?service=web&hostname=web-01").json()["profiles"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["gpid"], gpid);
  EXPECT_EQ(listed[0]["start_time"], "2026-11-22T10:00:00.000Z");
  EXPECT_EQ(server_->get("/api/profiles?since=2026-11-23T00:00:00Z").json()["profiles"].size(), 0u);

  HttpReply raw = server_->get("/api/profiles/" + std::to_string(gpid) + "/collapsed");
  EXPECT_EQ(raw.status, 200);
  EXPECT_EQ(raw.body, collapsed);

  fs::path svg = root_ / "flamegraph.svg";
  HttpReply drawn = server_->curl(
      {"-o", svg.string(), server_->url("/api/profiles/" + std::to_string(gpid) + "/flamegraph")});
  EXPECT_EQ(drawn.status, 200);
  auto lint =
      run_command({"xmllint", "--noout", svg.string()}, deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(lint.ok());
  EXPECT_TRUE(lint->status.success()) << lint->stderr_text;
  std::string text = read_file(svg).value_or("");
  EXPECT_NE(text.find("<title>handle_request"), std::string::npos);
  EXPECT_NE(text.find("web: web-01"), std::string::npos) << "the page names service and host";
}

// Issue 36: the stock gProfiler agent's upload, byte for byte as its ProfilerAPIClient sends it
// (data/gprofiler_stock_upload.json: Python's json.dump of its body, times and spawn_time as naive
// UTC text, gpid ""), with its query string and headers; then its next upload, which sends back
// the gpid it was answered. Both were refused with 422 once, and gProfiler drops a refused profile.
TEST_F(ServerTest, TheStockGprofilerAgentsUploadsAreAccepted) {
  start();
  auto stock_body = read_file(STOCK_UPLOAD);
  ASSERT_TRUE(stock_body.ok()) << STOCK_UPLOAD;
  auto post = [&](const std::string& body) {
    fs::path file = root_ / "stock-upload.gz";
    std::ofstream(file, std::ios::binary) << gzip(body);
    return server_->curl(
        {"-X", "POST", "-H", std::string("GPROFILER-API-KEY: ") + kToken, "-H",
         "GPROFILER-SERVICE-NAME: web", "-H", "Content-Encoding: gzip", "-H",
         "Content-type: application/json", "--data-binary", "@" + file.string(),
         server_->url(std::string("/api/v2/profiles?key=") + kToken +
                      "&service=web&hostname=web-01&timestamp=2026-11-28T01:21:08&version=1.50.0")},
        /*with_token=*/false);
  };
  HttpReply first = post(*stock_body);
  ASSERT_EQ(first.status, 200) << first.body;
  const int64_t gpid = first.json()["gpid"];

  json next = json::parse(*stock_body);
  next["gpid"] = gpid;
  next["start_time"] = "2026-11-28T01:21:08";
  next["end_time"] = "2026-11-28T01:22:08";
  HttpReply second = post(next.dump());
  ASSERT_EQ(second.status, 200) << second.body;

  json listed = server_->get("/api/profiles?service=web&hostname=web-01").json()["profiles"];
  EXPECT_EQ(listed.size(), 2u);
  HttpReply stored = server_->get("/api/profiles/" + std::to_string(gpid) + "/collapsed");
  EXPECT_EQ(stored.body, json::parse(*stock_body)["profile"].get<std::string>())
      << "stored as it came";

  // The same agent run with --disable-application-metadata: no index before each stack.
  json without_index = json::parse(*stock_body);
  std::string profile = without_index["profile"];
  const std::string enabled = "\"application_metadata_enabled\": true";
  ASSERT_NE(profile.find(enabled), std::string::npos);
  profile.replace(profile.find(enabled), enabled.size(), "\"application_metadata_enabled\": false");
  for (size_t at = profile.find("\n0;"); at != std::string::npos; at = profile.find("\n0;", at)) {
    profile.erase(at + 1, 2);
  }
  without_index["profile"] = profile;
  HttpReply third = post(without_index.dump());
  ASSERT_EQ(third.status, 200) << third.body;
  HttpReply drawn = server_->get("/api/profiles/" + third.json()["gpid"].dump() + "/flamegraph");
  EXPECT_NE(drawn.body.find("render (/srv/app.py)"), std::string::npos) << "stacks read whole";

  // What is malformed is still refused, and says which field.
  json bad_spawn = json::parse(*stock_body);
  bad_spawn["spawn_time"] = "2026-11-31T00:21:08";
  HttpReply refused = post(bad_spawn.dump());
  EXPECT_EQ(refused.status, 422);
  EXPECT_NE(refused.body.find("spawn_time"), std::string::npos) << refused.body;
}

// Issue 22, server 9: what the server writes is its own, and exposures are said at start.
TEST_F(ServerTest, ItsFilesAreItsOwnAndAnExposedTokensFileIsSaid) {
  std::ofstream(root_ / "tokens") << kToken << "\n";
  fs::permissions(root_ / "tokens", fs::perms::owner_read | fs::perms::owner_write |
                                        fs::perms::group_read | fs::perms::others_read);
  start();
  beat("web-01");
  EXPECT_NE(server_->log().find("may be read by its group or by others"), std::string::npos)
      << server_->log();
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root_ / "data")) {
    const auto perms = entry.status().permissions();
    const auto others = fs::perms::group_all | fs::perms::others_all;
    EXPECT_EQ(perms & others, fs::perms::none) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 1u);
  server_->stop();
  fs::permissions(root_ / "tokens", fs::perms::owner_read | fs::perms::owner_write);
  start();
  EXPECT_EQ(server_->log().find("may be read by its group or by others"), std::string::npos);
}

// Issue 22, server 5: --max-connections past the open file limit would make accepts fail; the
// server takes what the limit allows and says so.
TEST_F(ServerTest, MaxConnectionsIsKeptWithinTheOpenFileLimit) {
  std::string log = start_up_log("127.0.0.1", {"prlimit", "--nofile=100:100"});
  EXPECT_NE(log.find("--max-connections 16384 is more than the open file limit (100) allows: 50 "
                     "it is"),
            std::string::npos)
      << log;
}

TEST_F(ServerTest, PlainHttpBeyondLoopbackIsSaidAtStart) {
  for (const char* address : {"127.0.0.1", "0.0.0.0"}) {
    std::string log = start_up_log(address);
    bool said = log.find("not a loopback address") != std::string::npos;
    EXPECT_EQ(said, std::string(address) == "0.0.0.0") << address << ": " << log;
  }
}

TEST_F(ServerTest, WrongOrMissingTokensAreRefused) {
  start();
  json body = agent_heartbeat("web-01");
  for (const std::vector<std::string>& auth : std::vector<std::vector<std::string>>{
           {},
           {"-H", "Authorization: Bearer wrong"},
           {"-H", "Authorization: Basic dGVzdA=="},
           {"-H", std::string("Authorization: Bearer ") + kToken + "x"}}) {
    std::vector<std::string> args = auth;
    args.insert(args.end(), {"-X", "POST", "--data-binary", body.dump(),
                             server_->url("/api/metrics/heartbeat")});
    HttpReply reply = server_->curl(args, /*with_token=*/false);
    EXPECT_EQ(reply.status, 401) << reply.body;
    EXPECT_NE(reply.body.find("token"), std::string::npos) << reply.body;
  }
  for (const char* path : {"/api/hosts", "/api/commands", "/api/profiles", "/metrics"}) {
    EXPECT_EQ(server_->curl({server_->url(path)}, /*with_token=*/false).status, 401) << path;
  }
  HttpReply second_token = server_->curl(
      {"-H", "Authorization: Bearer second-token", server_->url("/api/hosts")}, false);
  EXPECT_EQ(second_token.status, 200) << "every token of the file is accepted";
  fs::path file = root_ / "body";
  std::ofstream(file) << gzip(
      upload_body("web-01", collapsed_profile("web-01", "0;;a;b 1\n")).dump());
  HttpReply bad_key = server_->curl(
      {"-X", "POST", "-H", "GPROFILER-API-KEY: nope", "-H", "GPROFILER-SERVICE-NAME: web",
       "--data-binary", "@" + file.string(), server_->url("/api/v2/profiles")},
      false);
  EXPECT_EQ(bad_key.status, 401);
  EXPECT_EQ(server_->log().find(kToken), std::string::npos) << "a token was logged";
}

// Issue 22, server 5: bodies were read before the token was checked (200 x 4 MiB uploads cost
// 848 MB). A client that waits for "100 Continue" is now refused before it sends a byte.
TEST_F(ServerTest, AnUploadWithoutATokenIsRefusedBeforeItsBodyIsSent) {
  start();
  fs::path big = root_ / "big";
  std::ofstream(big) << std::string(3 << 20, 'x');
  auto upload = [&](const std::string& key) {
    HttpReply reply = server_->curl(
        {"-X", "POST", "-H", "GPROFILER-API-KEY: " + key, "-H", "GPROFILER-SERVICE-NAME: web", "-H",
         "Expect: 100-continue", "--expect100-timeout", "30", "--data-binary", "@" + big.string(),
         "-w", "\n%{size_upload}\n%{http_code}", server_->url("/api/v2/profiles")},
        /*with_token=*/false);
    size_t newline = reply.body.rfind('\n');
    return std::make_pair(reply.status, std::atol(reply.body.c_str() + newline + 1));
  };
  auto [refused, refused_sent] = upload("nope");
  EXPECT_EQ(refused, 401);
  EXPECT_EQ(refused_sent, 0) << "the body was not sent";
  auto [admitted, admitted_sent] = upload(kToken);
  EXPECT_EQ(admitted, 400) << "junk, read and refused";
  EXPECT_EQ(admitted_sent, 3 << 20) << "with the token the body is sent";
}

TEST_F(ServerTest, ClientCertificateRequiredWhenAClientCaIsSet) {
  ASSERT_TRUE(server_->start({"--tls-client-ca", (root_ / "certs" / "ca.pem").string()}))
      << server_->log();
  HttpReply without = server_->curl({server_->url("/api/v1/health_check")});
  EXPECT_EQ(without.status, 0) << "served without a client certificate: " << without.body;
  HttpReply with =
      server_->curl({"--cert", server_->cert("client.pem").string(), "--key",
                     server_->cert("client.key").string(), server_->url("/api/v1/health_check")});
  EXPECT_EQ(with.status, 200) << with.body;
}

// With --bind-hostname-to-certificate a host speaks only with a certificate that names it: in
// its subjectAltName, or in its CN when it has none. Reads are not bound.
TEST_F(ServerTest, BoundToCertificatesAHostCannotSpeakForAnother) {
  ASSERT_TRUE(server_->start(
      {"--tls-client-ca", (root_ / "certs" / "ca.pem").string(), "--bind-hostname-to-certificate"}))
      << server_->log();
  auto made = run_command({GEN_CERTS, "--client", "web-01", (root_ / "certs").string()},
                          deadline_after(std::chrono::seconds(60)));
  ASSERT_TRUE(made.ok() && made->status.success());
  auto as = [&](const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> with = {"--cert", server_->cert(name + ".pem").string(), "--key",
                                     server_->cert(name + ".key").string()};
    with.insert(with.end(), args.begin(), args.end());
    return server_->curl(with);
  };
  auto post = [&](const std::string& name, const std::string& path, const json& body) {
    return as(name, {"-H", "Content-Type: application/json", "--data-binary", body.dump(),
                     server_->url(path)});
  };
  EXPECT_EQ(post("client-web-01", "/api/metrics/heartbeat", agent_heartbeat("web-01")).status, 200);
  HttpReply other = post("client-web-01", "/api/metrics/heartbeat", agent_heartbeat("web-02"));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_NE(other.body.find("names web-01, not web-02"), std::string::npos) << other.body;
  // client.pem has no subjectAltName: its CN, dormant-agent, is the name.
  EXPECT_EQ(post("client", "/api/metrics/heartbeat", agent_heartbeat("web-01")).status, 403);
  EXPECT_EQ(post("client", "/api/metrics/heartbeat", agent_heartbeat("dormant-agent")).status, 200);

  // An unknown command: refused by the store (200, success false) once the host is allowed.
  json completion = {{"command_id", "6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79"},
                     {"hostname", "web-01"},
                     {"status", "completed"},
                     {"execution_time", 0},
                     {"error_message", nullptr},
                     {"results_path", nullptr}};
  EXPECT_EQ(post("client", "/api/metrics/command_completion", completion).status, 403);
  EXPECT_EQ(post("client-web-01", "/api/metrics/command_completion", completion).status, 200);

  fs::path file = root_ / "upload.gz";
  std::ofstream(file, std::ios::binary)
      << gzip(upload_body("web-01", collapsed_profile("web-01", "0;;a;b 1\n")).dump());
  auto upload = [&](const std::string& name) {
    return as(name, {"-X", "POST", "-H", std::string("GPROFILER-API-KEY: ") + kToken, "-H",
                     "GPROFILER-SERVICE-NAME: web", "-H", "Content-Encoding: gzip", "-H",
                     "Content-Type: application/json", "--data-binary", "@" + file.string(),
                     server_->url("/api/v2/profiles")});
  };
  EXPECT_EQ(upload("client").status, 403);
  EXPECT_EQ(upload("client-web-01").status, 200);
  EXPECT_EQ(as("client", {server_->url("/api/hosts")}).status, 200);
}

struct Hostile {
  const char* what;
  std::vector<std::string> args;  // curl arguments before the URL
  const char* path;
  int status;
  const char* says;  // part of the message
};

TEST_F(ServerTest, MalformedAndHostileRequestsGetTheirStatusAndTheServerGoesOn) {
  start({"--max-body-bytes", "65536", "--read-timeout", "2"});
  fs::path big = oversized_heartbeat();
  fs::path not_gzip = root_ / "not-gzip";
  std::ofstream(not_gzip)
      << upload_body("web-01", collapsed_profile("web-01", "0;;a;b 1\n")).dump();
  fs::path bad_gzip = root_ / "bad-gzip";
  std::string truncated =
      gzip(upload_body("web-01", collapsed_profile("web-01", "0;;a 1\n")).dump());
  std::ofstream(bad_gzip, std::ios::binary) << truncated.substr(0, truncated.size() / 2);
  fs::path no_header = root_ / "no-header";
  std::ofstream(no_header, std::ios::binary) << gzip(upload_body("web-01", "0;;a;b 1\n").dump());
  fs::path bad_header = root_ / "bad-header";
  std::ofstream(bad_header, std::ios::binary)
      << gzip(upload_body("web-01", "# {not json\n0;;a;b 1\n").dump());
  fs::path thin_header = root_ / "thin-header";
  std::ofstream(thin_header, std::ios::binary)
      << gzip(upload_body("web-01", "# {\"metadata\":{\"hostname\":\"h\"}}\n0;;a 1\n").dump());
  // Issue 22, server 2 and 1: every line is checked at upload, counts cannot overflow, stacks are
  // at most 2048 frames deep, times lie between 1970 and 2200.
  auto gzipped_upload = [&](const std::string& name, json body) {
    fs::path file = root_ / name;
    std::ofstream(file, std::ios::binary) << gzip(body.dump());
    return file;
  };
  fs::path garbage_line = gzipped_upload(
      "garbage-line", upload_body("web-01", collapsed_profile("web-01", "0;;a;b 1\nnot a line\n")));
  fs::path overflow = gzipped_upload(
      "overflow",
      upload_body("web-01", collapsed_profile("web-01", "0;;a 18446744073709551615\n0;;b 1\n")));
  std::string deep = "0;;app";
  for (int i = 0; i < 2049; ++i) deep += ";f";
  fs::path too_deep =
      gzipped_upload("too-deep", upload_body("web-01", collapsed_profile("web-01", deep + " 1\n")));
  json far_future = upload_body("web-01", collapsed_profile("web-01", "0;;a 1\n"));
  far_future["end_time"] = "9999-01-01T00:00:00";
  fs::path year_9999 = gzipped_upload("year-9999", far_future);
  fs::path bomb = root_ / "bomb";
  std::ofstream(bomb, std::ios::binary) << gzip(std::string(300 << 20, ' '));
  std::string key = std::string("GPROFILER-API-KEY: ") + kToken;
  std::vector<std::string> upload_headers = {
      "-H", key, "-H", "GPROFILER-SERVICE-NAME: web", "-H", "Content-Encoding: gzip"};
  auto with_upload_headers = [&](std::vector<std::string> args) {
    args.insert(args.begin(), upload_headers.begin(), upload_headers.end());
    return args;
  };
  json start = {
      {"service_name", "web"}, {"request_type", "start"}, {"target_hosts", {{"h", nullptr}}}};
  auto start_with = [&](const char* key, json value) {
    json body = start;
    body[key] = std::move(value);
    return body.dump();
  };
  json heartbeat = agent_heartbeat("web-01");
  auto heartbeat_with = [&](const char* key, json value) {
    json body = heartbeat;
    body[key] = std::move(value);
    return body.dump();
  };
  const char* hb = "/api/metrics/heartbeat";
  const char* pr = "/api/metrics/profile_request";
  const char* cc = "/api/metrics/command_completion";
  const char* up = "/api/v2/profiles";
  std::vector<Hostile> cases = {
      // Studio answers malformed JSON 422, with a "detail" list.
      {"not JSON", {"--data-binary", "{\"hostname\": "}, hb, 422, "heartbeat"},
      {"number out of range",
       {"--data-binary", R"({"service_name":"web","duration":1e999})"},
       pr,
       422,
       "too large"},
      {"empty body", {"-X", "POST"}, hb, 422, "no body"},
      {"JSON array", {"--data-binary", "[1,2]"}, hb, 422, "object"},
      {"deep nesting",
       {"--data-binary", std::string(5000, '[') + std::string(5000, ']')},
       pr,
       422,
       ""},
      {"hostname a number", {"--data-binary", heartbeat_with("hostname", 7)}, hb, 422, "hostname"},
      {"ip not an address",
       {"--data-binary", heartbeat_with("ip_address", "10.0.0.300")},
       hb,
       422,
       "ip_address"},
      // Opaque, as in Studio, and only ever a bound parameter.
      {"command id not a UUID",
       {"--data-binary", heartbeat_with("last_command_id", "1; DROP TABLE hosts")},
       hb,
       200,
       "No profiling commands"},
      {"status unknown", {"--data-binary", heartbeat_with("status", "sleepy")}, hb, 422, "status"},
      {"control characters in a name",
       {"--data-binary", heartbeat_with("hostname", "web\n01")},
       hb,
       422,
       "hostname"},
      {"missing service_name",
       {"--data-binary",
        json({{"request_type", "start"}, {"target_hosts", {{"h", nullptr}}}}).dump()},
       pr,
       422,
       "service_name"},
      {"request_type unknown",
       {"--data-binary", start_with("request_type", "pause")},
       pr,
       422,
       "request_type"},
      {"duration zero", {"--data-binary", start_with("duration", 0)}, pr, 422, "duration"},
      {"frequency a string",
       {"--data-binary", start_with("frequency", "fast")},
       pr,
       422,
       "frequency"},
      {"target_hosts empty",
       {"--data-binary", start_with("target_hosts", json::object())},
       pr,
       422,
       "target_hosts"},
      {"negative pid",
       {"--data-binary", start_with("target_hosts", {{"h", {-5}}})},
       pr,
       422,
       "target_hosts"},
      {"process stop without pids",
       {"--data-binary",
        R"({"service_name":"web","request_type":"stop","target_hosts":{"h":null}})"},
       pr,
       422,
       "pid"},
      {"completion status unknown",
       {"--data-binary",
        R"({"command_id":"6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79","hostname":"h","status":"done"})"},
       cc,
       422,
       "status"},
      {"body over the limit", {"--data-binary", "@" + big.string()}, hb, 413, "larger than"},
      {"upload without Content-Length",
       with_upload_headers(
           {"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + bad_gzip.string()}),
       up, 411, "Content-Length"},
      {"upload claiming gzip, sending JSON",
       with_upload_headers({"--data-binary", "@" + not_gzip.string()}), up, 400, "not gzip"},
      {"truncated gzip", with_upload_headers({"--data-binary", "@" + bad_gzip.string()}), up, 400,
       "truncated"},
      {"gzip bomb", with_upload_headers({"--data-binary", "@" + bomb.string()}), up, 413,
       "more than"},
      {"profile without header line",
       with_upload_headers({"--data-binary", "@" + no_header.string()}), up, 422, "first line"},
      {"header line not JSON", with_upload_headers({"--data-binary", "@" + bad_header.string()}),
       up, 422, "profile header"},
      {"header without Studio's metadata",
       with_upload_headers({"--data-binary", "@" + thin_header.string()}), up, 422, "metadata"},
      {"a line that is not a stack",
       with_upload_headers({"--data-binary", "@" + garbage_line.string()}), up, 422,
       "profile: line 3: 'line' is not a sample count"},
      {"counts past 2^64", with_upload_headers({"--data-binary", "@" + overflow.string()}), up, 422,
       "line 3: the sample counts add up to more than 2^64"},
      {"a stack of 2049 frames", with_upload_headers({"--data-binary", "@" + too_deep.string()}),
       up, 422, "line 2: more than 2048 frames"},
      {"year 9999", with_upload_headers({"--data-binary", "@" + year_9999.string()}), up, 422,
       "end_time"},
      {"a query in year 9999", {}, "/api/profiles?since=9999-01-01T00:00:00Z", 400, "since"},
      {"upload without service",
       {"-H", key, "--data-binary", "@" + no_header.string()},
       up,
       400,
       "GPROFILER-SERVICE-NAME"},
      {"unknown endpoint", {}, "/api/metrics/nothing", 404, "no such endpoint"},
      {"wrong method", {"-X", "DELETE"}, hb, 405, "POST"},
      {"unknown command", {}, "/api/commands/6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79", 404, ""},
      {"profile id not a number", {}, "/api/profiles/1%20OR%201=1/collapsed", 404, "no profile"},
      {"bad limit", {}, "/api/profiles?limit=-1", 400, "limit"},
      {"bad time", {}, "/api/profiles?since=yesterday", 400, "since"},
  };
  ASSERT_GE(cases.size(), 25u);
  // The bomb is some 300 KiB compressed, over this server's body limit: it gets a server with
  // the default 4 MiB limit below, so that decompression is what stops it.
  for (const Hostile& hostile : cases) {
    if (std::string(hostile.what) == "gzip bomb") continue;
    std::vector<std::string> args = hostile.args;
    args.push_back(server_->url(hostile.path));
    HttpReply reply = server_->curl(args);
    EXPECT_EQ(reply.status, hostile.status)
        << hostile.what << ": curl exited " << reply.curl_exit << ": " << reply.body;
    EXPECT_NE(reply.body.find(hostile.says), std::string::npos)
        << hostile.what << ": " << reply.body;
    EXPECT_TRUE(reply.json().is_object())
        << hostile.what << ": the answer is not JSON: " << reply.body;
  }
  // A client that sends its request a byte a second is cut off; others are served meanwhile.
  SpawnOptions slow_client;
  slow_client.argv = {"curl",
                      "-sS",
                      "--cacert",
                      server_->cert("ca.pem").string(),
                      "--limit-rate",
                      "1",
                      "-H",
                      std::string("Authorization: Bearer ") + kToken,
                      "--data-binary",
                      std::string(200, 'x'),
                      server_->url(hb),
                      "-o",
                      "/dev/null",
                      "-w",
                      "%{http_code}"};
  auto slow = Subprocess::spawn(slow_client);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(server_->curl({server_->url("/api/v1/health_check")}).status, 200);
  auto slow_status = (*slow)->wait(deadline_after(std::chrono::seconds(20)));
  EXPECT_TRUE(slow_status.ok()) << "the slow client was not cut off";
  // And after all of it, a proper heartbeat is still served.
  EXPECT_EQ(beat("web-01")["success"], true);
  EXPECT_EQ(server_->get("/metrics").status, 200);

  server_->stop();
  ASSERT_TRUE(server_->start({"--max-body-bytes", std::to_string(4 << 20)}));
  const Hostile& gzip_bomb = *std::find_if(cases.begin(), cases.end(), [](const Hostile& h) {
    return std::string(h.what) == "gzip bomb";
  });
  std::vector<std::string> args = gzip_bomb.args;
  args.push_back(server_->url(gzip_bomb.path));
  HttpReply reply = server_->curl(args);
  EXPECT_EQ(reply.status, 413) << reply.body;
  EXPECT_NE(reply.body.find("more than"), std::string::npos) << reply.body;
}

// The server answers 413 as soon as it reads the Content-Length, while curl is still sending the
// body. Were the connection closed on the unread rest, the kernel's reset would reach curl in the
// middle of its upload, some runs in a hundred, and curl would give up without the reply.
TEST_F(ServerTest, AClientStillSendingAnOversizedBodyGetsTheRefusalEveryTime) {
  start({"--max-body-bytes", "65536"});
  fs::path big = oversized_heartbeat();
  constexpr int kUploads = 100;
  int refused = 0;
  for (int i = 0; i < kUploads; ++i) {
    HttpReply reply = server_->curl(
        {"--data-binary", "@" + big.string(), server_->url("/api/metrics/heartbeat")});
    if (reply.status == 413 && reply.curl_exit == 0) {
      ++refused;
    } else {
      ADD_FAILURE() << "upload " << i << ": status " << reply.status << ", curl exited "
                    << reply.curl_exit << ": " << reply.body;
    }
  }
  EXPECT_EQ(refused, kUploads);
}

TEST_F(ServerTest, MetricsCountWhatHappened) {
  start();
  request({{"service_name", "web"},
           {"request_type", "start"},
           {"target_hosts", {{"web-01", nullptr}}}});
  beat("web-01");
  beat("web-01");
  server_->post_text("/api/metrics/heartbeat", "nope");
  HttpReply metrics = server_->get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("dormant_server_heartbeats_total 2"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("dormant_server_commands_delivered_total 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(
                R"(dormant_server_requests_total{endpoint="/api/metrics/heartbeat",code="422"} 1)"),
            std::string::npos)
      << metrics.body;
}

// Requests are made one after another while the server is killed with SIGKILL at a random
// moment; after a restart, everything the server acknowledged is there.
TEST_F(ServerTest, EverythingAcknowledgedSurvivesKill9AndRestart) {
  start();
  std::vector<std::string> acknowledged;
  std::atomic<bool> killed = false;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    killed = true;
    server_->kill();
  });
  for (int i = 0; i < 500 && !killed; ++i) {
    HttpReply reply =
        server_->post_json("/api/metrics/profile_request",
                           {{"service_name", "web"},
                            {"request_type", "start"},
                            {"target_hosts", {{"host-" + std::to_string(i), nullptr}}}});
    if (reply.status == 200) acknowledged.push_back(reply.json()["request_id"]);
  }
  killer.join();
  ASSERT_GT(acknowledged.size(), 3u) << "too few requests before the kill to show anything";
  start();
  for (const std::string& id : acknowledged) {
    EXPECT_EQ(server_->get("/api/requests/" + id).status, 200) << "lost request " << id;
  }
  EXPECT_EQ(server_->stop().code, 0);
}

TEST_F(ServerTest, SigtermStopsCleanlyAndTheDataStays) {
  start();
  request({{"service_name", "web"},
           {"request_type", "start"},
           {"target_hosts", {{"web-01", nullptr}}}});
  ExitStatus status = server_->stop();
  EXPECT_TRUE(status.success()) << status.describe() << "\n" << server_->log();
  start();
  EXPECT_EQ(beat("web-01")["profiling_command"]["command_type"], "start");
}

// The data directory on a small tmpfs of its own, that a test fills or makes read-only while the
// server runs. Mounting needs root: elsewhere the tests are skipped, saying why.
class DataDirFaultTest : public ServerTest {
 protected:
  static constexpr const char* kFull = "No space left on device";
  static constexpr const char* kReadOnly = "Read-only file system";
  static constexpr const char* kRefusalLogged = "storage: the server cannot store data:";
  static constexpr const char* kRecoveryLogged = "takes writes again";

  void SetUp() override {
    ServerTest::SetUp();
    data_ = root_ / "data";
    std::string why;
    mount_ = TmpfsMount::make(data_, "6m", why);
    if (!mount_) GTEST_SKIP() << why;
  }

  void TearDown() override {
    server_.reset();  // it holds files of the mount open
    mount_.reset();
    ServerTest::TearDown();
  }

  // Uploads may fill the disk unless a test asks for a reserve: the 6 MB tmpfs has less than the
  // default one.
  void start(std::vector<std::string> args = {}) {
    if (std::find(args.begin(), args.end(), "--min-free-disk-mb") == args.end()) {
      args.insert(args.end(), {"--min-free-disk-mb", "0"});
    }
    ServerTest::start(args);
  }

  // A reply with its headers, which curl writes to a file.
  struct Answer {
    HttpReply reply;
    std::string headers;
  };
  Answer post(const std::string& path, const json& body) {
    fs::path headers = root_ / "headers";
    HttpReply reply =
        server_->curl({"-D", headers.string(), "-X", "POST", "-H", "Content-Type: application/json",
                       "--data-binary", body.dump(), server_->url(path)});
    return {reply, read_file(headers).value_or("")};
  }
  Answer upload_profile(const std::string& collapsed) {
    fs::path headers = root_ / "headers";
    HttpReply reply =
        upload(gzip(upload_body("web-01", collapsed).dump()), {"-D", headers.string()});
    return {reply, read_file(headers).value_or("")};
  }

  static json start_on(const std::vector<std::string>& hosts, bool dry_run = false) {
    json targets = json::object();
    for (const std::string& host : hosts) targets[host] = nullptr;
    return {{"service_name", "web"},
            {"request_type", "start"},
            {"dry_run", dry_run},
            {"target_hosts", targets}};
  }
  static json completion(const std::string& command_id) {
    return {{"command_id", command_id}, {"hostname", "web-01"},     {"status", "completed"},
            {"execution_time", 0},      {"error_message", nullptr}, {"results_path", nullptr}};
  }

  // The 503 for a full or read-only data directory: the reason, and when to try again.
  void expect_refused(const Answer& answer, const std::string& reason, const std::string& what) {
    EXPECT_EQ(answer.reply.status, 503) << what << ": " << answer.reply.body;
    json body = answer.reply.json();
    ASSERT_TRUE(body.is_object()) << what << ": not JSON: " << answer.reply.body;
    EXPECT_EQ(body["success"], false) << what;
    EXPECT_EQ(body["message"],
              "the server cannot store data: " + reason + " (" + data_.string() + ")")
        << what;
    std::string headers = answer.headers;
    std::transform(headers.begin(), headers.end(), headers.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    size_t field = headers.find("\nretry-after: ");
    ASSERT_NE(field, std::string::npos) << what << ": no Retry-After in\n" << answer.headers;
    EXPECT_GT(std::atoi(headers.c_str() + field + 14), 0) << what << ":\n" << answer.headers;
  }

  // Every write endpoint, refused for `reason`; `command_id` a command delivered to web-01.
  void expect_writes_refused(const std::string& reason, const std::string& command_id) {
    std::string collapsed = collapsed_profile("web-01", "0;;nginx;main;refused 1\n");
    expect_refused(upload_profile(collapsed), reason, "profile upload");
    expect_refused(post("/api/metrics/profile_request", start_on({"web-02"})), reason,
                   "profile request");
    expect_refused(post("/api/metrics/heartbeat", agent_heartbeat("web-01")), reason, "heartbeat");
    expect_refused(post("/api/metrics/command_completion", completion(command_id)), reason,
                   "command completion");
    // A dry run writes nothing: it is answered as ever.
    Answer dry = post("/api/metrics/profile_request", start_on({"web-02"}, /*dry_run=*/true));
    EXPECT_EQ(dry.reply.status, 200) << dry.reply.body;
  }

  // What the read endpoints give for `paths`; each must answer 200.
  std::vector<std::string> read_back(const std::vector<std::string>& paths) {
    std::vector<std::string> bodies;
    for (const std::string& path : paths) {
      HttpReply reply = server_->get(path);
      EXPECT_EQ(reply.status, 200) << path << ": " << reply.body;
      bodies.push_back(reply.body);
    }
    return bodies;
  }

  // The files of profiles/: whole profiles only, no temporary file.
  std::vector<std::string> profile_files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(data_ / "profiles")) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static size_t occurrences(const std::string& text, const std::string& part) {
    size_t count = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
      ++count;
    }
    return count;
  }

  // Some state to keep: a profile, a request and its command, delivered to web-01.
  struct Stored {
    std::string collapsed;
    int64_t gpid = 0;
    std::string request_id;
    std::string command_id;
    std::vector<std::string> reads;
  };
  Stored store_some() {
    Stored stored;
    stored.collapsed = collapsed_profile("web-01", "0;;nginx;main;kept 5\n0;;nginx;main;idle 2\n");
    Answer uploaded = upload_profile(stored.collapsed);
    EXPECT_EQ(uploaded.reply.status, 200) << uploaded.reply.body;
    stored.gpid = uploaded.reply.json().value("gpid", int64_t{0});
    json started = request(start_on({"web-01"}));
    stored.request_id = started.value("request_id", "");
    if (started["command_ids"].size() == 1) stored.command_id = started["command_ids"][0];
    EXPECT_EQ(beat("web-01")["command_id"], stored.command_id);
    stored.reads = read_back(read_paths(stored));
    return stored;
  }
  static std::vector<std::string> read_paths(const Stored& stored) {
    return {"/api/profiles",
            "/api/profiles/" + std::to_string(stored.gpid),
            "/api/profiles/" + std::to_string(stored.gpid) + "/collapsed",
            "/api/hosts",
            "/api/commands",
            "/api/commands/" + stored.command_id,
            "/api/requests/" + stored.request_id};
  }

  fs::path data_;
  std::unique_ptr<TmpfsMount> mount_;
};

TEST_F(DataDirFaultTest, AFullDataDirGets503WithTheReasonKeepsItsDataAndRecoversWhenFreed) {
  start();
  Stored stored = store_some();
  ASSERT_EQ(profile_files().size(), 1u);
  ASSERT_NO_FATAL_FAILURE(mount_->fill());

  expect_writes_refused(kFull, stored.command_id);
  EXPECT_EQ(read_back(read_paths(stored)), stored.reads) << "what was stored reads back the same";
  EXPECT_EQ(profile_files().size(), 1u) << "a refused upload leaves no file";
  std::string log = server_->log();
  EXPECT_EQ(occurrences(log, kRefusalLogged), 1u) << "one line when the refusals start:\n" << log;
  EXPECT_NE(log.find(kFull), std::string::npos) << log;
  std::string metrics = server_->get("/metrics").body;
  EXPECT_NE(metrics.find("dormant_server_storage_refusals_total 4"), std::string::npos) << metrics;
  EXPECT_NE(
      metrics.find(R"(dormant_server_requests_total{endpoint="/api/v2/profiles",code="503"} 1)"),
      std::string::npos)
      << metrics;

  // Space returns: the same server takes the next writes.
  ASSERT_TRUE(fs::remove(mount_->filler()));
  std::string later = collapsed_profile("web-01", "0;;nginx;main;later 3\n");
  Answer uploaded = upload_profile(later);
  ASSERT_EQ(uploaded.reply.status, 200) << uploaded.reply.body;
  int64_t gpid = uploaded.reply.json()["gpid"];
  EXPECT_GT(gpid, stored.gpid);
  EXPECT_EQ(server_->get("/api/profiles/" + std::to_string(gpid) + "/collapsed").body, later);
  EXPECT_EQ(server_->get("/api/profiles/" + std::to_string(stored.gpid) + "/collapsed").body,
            stored.collapsed);
  EXPECT_EQ(request(start_on({"web-02"}))["success"], true);
  EXPECT_EQ(beat("web-01")["command_id"], stored.command_id);
  EXPECT_EQ(complete(stored.command_id, "web-01")["success"], true)
      << "the completion refused while full is accepted now";
  log = server_->log();
  EXPECT_EQ(occurrences(log, kRecoveryLogged), 1u) << log;
  EXPECT_NE(log.find("4 write(s) were refused"), std::string::npos) << log;
  EXPECT_EQ(occurrences(log, kRefusalLogged), 1u) << log;
}

// Space that runs out during a write, rather than before it: the upload's file is written in
// part, the request's transaction in part; neither is left behind.
TEST_F(DataDirFaultTest, WritesThatRunOutOfSpaceMidwayLeaveNothingBehind) {
  start();
  Stored stored = store_some();
  constexpr uint64_t kLeft = 160 << 10;  // over the reserve the server keeps: writes are tried
  ASSERT_NO_FATAL_FAILURE(mount_->fill(kLeft));

  // Some 600 kB of random hex: gzip leaves it over 300 kB, more than there is room for.
  std::mt19937_64 random(42);
  std::string stacks;
  while (stacks.size() < (600 << 10)) {
    char line[64];
    std::snprintf(line, sizeof line, "0;;f%016llx;g%016llx 1\n",
                  static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    stacks += line;
  }
  std::string big = collapsed_profile("web-01", stacks);
  Answer refused = upload_profile(big);
  expect_refused(refused, kFull, "an upload larger than the space left");
  EXPECT_EQ(profile_files().size(), 1u) << "no part of the refused profile stays";
  EXPECT_EQ(mount_->free_bytes(), kLeft) << "its temporary file is gone";
  std::string log = server_->log();
  EXPECT_NE(log.find("write("), std::string::npos) << "the failed write is logged:\n" << log;

  // Smaller writes fit still.
  EXPECT_EQ(beat("web-01")["command_id"], stored.command_id);
  std::vector<std::string> reads = read_back(read_paths(stored));
  EXPECT_EQ(reads[0], stored.reads[0]) << "the profiles are as they were";
  EXPECT_EQ(reads[2], stored.collapsed);

  // A request for 1000 hosts, whose rows would not fit in the space left: refused before its
  // first batch.
  std::vector<std::string> hosts;
  for (int i = 0; i < 1000; ++i) hosts.push_back("host-" + std::to_string(i) + ".example.com");
  expect_refused(post("/api/metrics/profile_request", start_on(hosts)), kFull,
                 "a request too large for the space left");
  EXPECT_EQ(read_back(read_paths(stored)), reads) << "nothing of it was written";
  log = server_->log();
  EXPECT_NE(log.find("this write needs (500 KiB)"), std::string::npos) << log;
  EXPECT_EQ(occurrences(log, kRefusalLogged), 2u) << log;
  EXPECT_EQ(occurrences(log, kRecoveryLogged), 1u) << "the heartbeat went through:\n" << log;

  ASSERT_TRUE(fs::remove(mount_->filler()));
  json started = request(start_on(hosts));
  EXPECT_EQ(started["command_ids"].size(), hosts.size()) << started;
  Answer uploaded = upload_profile(big);
  ASSERT_EQ(uploaded.reply.status, 200) << uploaded.reply.body << "\n"
                                        << mount_->free_bytes() << " bytes free";
  int64_t gpid = uploaded.reply.json()["gpid"];

  // And all of it is there after a restart.
  ExitStatus exit = server_->stop();
  EXPECT_TRUE(exit.success()) << exit.describe() << "\n" << server_->log();
  start();
  EXPECT_EQ(server_->get("/api/profiles/" + std::to_string(stored.gpid) + "/collapsed").body,
            stored.collapsed);
  EXPECT_EQ(server_->get("/api/profiles/" + std::to_string(gpid) + "/collapsed").body, big);
  EXPECT_EQ(server_->get("/api/commands?limit=10000").json()["commands"].size(), hosts.size() + 1);
  EXPECT_EQ(server_->get("/api/requests/" + std::string(started["request_id"])).status, 200);
}

// Issue 22, server 6: short of a full disk, uploads stop first with 507 and say why, while
// heartbeats, requests and completions go on in the reserve; and uploads stop at
// --max-storage-mb whatever the disk.
TEST_F(DataDirFaultTest, UploadsGet507ShortOfTheReserveAndEverythingElseGoesOn) {
  start({"--min-free-disk-mb", "1"});
  ASSERT_NO_FATAL_FAILURE(mount_->fill(1536 << 10));  // 1.5 MiB left: room for an upload
  Stored stored = store_some();
  ASSERT_NO_FATAL_FAILURE(mount_->fill(512 << 10));  // 0.5 MiB left: within the reserve

  Answer refused = upload_profile(collapsed_profile("web-01", "0;;nginx;main;refused 1\n"));
  EXPECT_EQ(refused.reply.status, 507) << refused.reply.body;
  std::string message = refused.reply.json().value("message", "");
  EXPECT_NE(message.find("takes no more profiles for now"), std::string::npos) << message;
  EXPECT_NE(message.find("--min-free-disk-mb"), std::string::npos) << message;
  EXPECT_NE(refused.headers.find("Retry-After"), std::string::npos) << refused.headers;
  EXPECT_EQ(profile_files().size(), 1u) << "a refused upload leaves no file";

  Answer heartbeat = post("/api/metrics/heartbeat", agent_heartbeat("web-01"));
  EXPECT_EQ(heartbeat.reply.status, 200) << heartbeat.reply.body;
  EXPECT_EQ(heartbeat.reply.json()["command_id"], stored.command_id);
  Answer requested = post("/api/metrics/profile_request", start_on({"web-02"}));
  EXPECT_EQ(requested.reply.status, 200) << requested.reply.body;
  Answer completed = post("/api/metrics/command_completion", completion(stored.command_id));
  EXPECT_EQ(completed.reply.status, 200) << completed.reply.body;
  EXPECT_EQ(completed.reply.json()["success"], true) << completed.reply.body;
  EXPECT_EQ(read_back({"/api/profiles/" + std::to_string(stored.gpid) + "/collapsed"})[0],
            stored.collapsed);

  ASSERT_TRUE(fs::remove(mount_->filler()));
  Answer uploaded = upload_profile(collapsed_profile("web-01", "0;;nginx;main;later 1\n"));
  EXPECT_EQ(uploaded.reply.status, 200) << uploaded.reply.body;
}

// Issue 22, server 3 and 4: hosts are listed a page at a time, like commands; a request names at
// most 10,000 hosts.
TEST_F(ServerTest, HostsAreListedAPageAtATimeAndRequestsNameAtMost10000Hosts) {
  start();
  for (int i = 0; i < 5; ++i) beat("web-0" + std::to_string(i));
  json page = server_->get("/api/hosts?limit=2").json()["hosts"];
  ASSERT_EQ(page.size(), 2u) << page;
  EXPECT_EQ(page[0]["hostname"], "web-00");
  EXPECT_EQ(page[1]["hostname"], "web-01");
  json one = server_->get("/api/hosts?hostname=web-03&service=web").json()["hosts"];
  ASSERT_EQ(one.size(), 1u) << one;
  EXPECT_EQ(one[0]["hostname"], "web-03");
  EXPECT_EQ(server_->get("/api/hosts").json()["hosts"].size(), 5u);
  for (const char* limit : {"0", "10001", "x"}) {
    HttpReply refused = server_->get(std::string("/api/hosts?limit=") + limit);
    EXPECT_EQ(refused.status, 400) << limit;
    EXPECT_NE(refused.body.find("limit: must be a whole number from 1 to 10000"), std::string::npos)
        << refused.body;
  }

  json targets = json::object();
  for (int i = 0; i <= 10000; ++i) targets["h" + std::to_string(i)] = nullptr;
  json refused =
      request({{"service_name", "web"}, {"request_type", "start"}, {"target_hosts", targets}}, 422);
  EXPECT_NE(refused.dump().find("target_hosts: must have at most 10000 hosts"), std::string::npos)
      << refused.dump().substr(0, 500);
  EXPECT_TRUE(server_->get("/api/commands").json()["commands"].empty());
}

TEST_F(ServerTest, UploadsGet507AtMaxStorageAndEverythingElseGoesOn) {
  start({"--max-storage-mb", "1"});
  // Random hex: 1.2 MB of it stays over 600 kB compressed.
  std::mt19937_64 random(3);
  std::string stacks;
  while (stacks.size() < (2400 << 10)) {
    char line[64];
    std::snprintf(line, sizeof line, "0;;f%016llx;g%016llx 1\n",
                  static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    stacks += line;
  }
  std::string first = stacks.substr(0, stacks.find('\n', 1200 << 10) + 1);
  std::string second = stacks.substr(first.size());
  HttpReply stored = upload(gzip(upload_body("web-01", collapsed_profile("web-01", first)).dump()));
  ASSERT_EQ(stored.status, 200) << stored.body;
  HttpReply refused =
      upload(gzip(upload_body("web-01", collapsed_profile("web-01", second)).dump()));
  EXPECT_EQ(refused.status, 507) << refused.body;
  EXPECT_NE(refused.body.find("--max-storage-mb"), std::string::npos) << refused.body;
  EXPECT_EQ(server_->get("/api/profiles").json()["profiles"].size(), 1u);
  beat("web-01");
  EXPECT_EQ(request({{"service_name", "web"},
                     {"request_type", "start"},
                     {"target_hosts", {{"web-01", nullptr}}}})["success"],
            true);
}

TEST_F(DataDirFaultTest, AReadOnlyDataDirGets503WithTheReasonAndRecoversWhenWritable) {
  start();
  Stored stored = store_some();
  ASSERT_NO_FATAL_FAILURE(mount_->make_read_only());

  expect_writes_refused(kReadOnly, stored.command_id);
  EXPECT_EQ(read_back(read_paths(stored)), stored.reads) << "what was stored reads back the same";
  std::string log = server_->log();
  EXPECT_EQ(occurrences(log, kRefusalLogged), 1u) << log;
  EXPECT_NE(log.find(kReadOnly), std::string::npos) << log;

  ASSERT_NO_FATAL_FAILURE(mount_->make_writable());
  Answer uploaded = upload_profile(collapsed_profile("web-01", "0;;nginx;main;writable 1\n"));
  EXPECT_EQ(uploaded.reply.status, 200) << uploaded.reply.body;
  EXPECT_EQ(request(start_on({"web-02"}))["success"], true);
  EXPECT_EQ(beat("web-01")["command_id"], stored.command_id);
  EXPECT_EQ(complete(stored.command_id, "web-01")["success"], true);
  EXPECT_EQ(profile_files().size(), 2u);
  log = server_->log();
  EXPECT_EQ(occurrences(log, kRecoveryLogged), 1u) << log;
  EXPECT_EQ(occurrences(log, kRefusalLogged), 1u) << log;
}

// ---------------------------------------------------------------------------------------------
// Long-polls, and the store on PostgreSQL

using namespace std::chrono_literals;

// The long-poll offer, as curl reads it from a plain heartbeat's answer.
std::string long_poll_offer(const ServerProcess& server, const json& heartbeat) {
  return server
      .curl({"-o", "/dev/null", "-w", "%header{x-dormant-long-poll}\n%{http_code}", "-H",
             "Content-Type: application/json", "--data-binary", heartbeat.dump(),
             server.url("/api/metrics/heartbeat")})
      .body;
}

TEST_F(ServerTest, AHeldHeartbeatGetsTheCommandAsSoonAsItIsRequested) {
  start({"--long-poll-max", "60"});
  EXPECT_EQ(long_poll_offer(*server_, agent_heartbeat("web-01")), "60");
  HttpReply held;
  std::thread agent([&] {
    held = server_->post_json("/api/metrics/heartbeat?wait=60", agent_heartbeat("web-01"));
  });
  // The request is made once the heartbeat is held (or, were it not held, after its answer).
  ASSERT_TRUE(
      eventually([&] { return server_->metric("dormant_server_heartbeats_total") >= 2; }, 30s));
  json made = request({{"service_name", "web"},
                       {"request_type", "start"},
                       {"target_hosts", {{"web-01", nullptr}}}});
  agent.join();
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(held.json()["command_id"], made["command_ids"][0]) << held.body;
  EXPECT_EQ(server_->metric("dormant_server_long_polls_woken_total"), 1);
  // Recorded once, when it came: its answer after the wait only delivers the command.
  EXPECT_EQ(server_->metric("dormant_server_heartbeats_total"), 2);
  EXPECT_EQ(server_->metric("dormant_server_commands_delivered_total"), 1);
  EXPECT_EQ(server_->metric("dormant_server_long_polls_expired_total"), 0);

  // A heartbeat that does not acknowledge the command it was given is answered at once.
  HttpReply again = server_->post_json("/api/metrics/heartbeat?wait=60", agent_heartbeat("web-01"));
  EXPECT_EQ(again.json()["command_id"], made["command_ids"][0]);
  // One that does is held until its wait runs out, and answered with the same command.
  json acknowledged = agent_heartbeat("web-01");
  acknowledged["received_command_ids"] = made["command_ids"];
  HttpReply expired = server_->post_json("/api/metrics/heartbeat?wait=1", acknowledged);
  EXPECT_EQ(expired.json()["command_id"], made["command_ids"][0]);
  EXPECT_EQ(server_->metric("dormant_server_long_polls_expired_total"), 1);
  EXPECT_EQ(server_->metric("dormant_server_long_polls_woken_total"), 1);
}

TEST_F(ServerTest, WithoutLongPollsAHeartbeatIsAnsweredAtOnceAndNothingIsOffered) {
  start({"--long-poll-max", "0"});
  EXPECT_EQ(long_poll_offer(*server_, agent_heartbeat("web-01")), "");
  HttpReply reply = server_->post_json("/api/metrics/heartbeat?wait=60", agent_heartbeat("web-01"));
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(server_->metric("dormant_server_long_polls_expired_total"), 0);
  EXPECT_EQ(server_->metric("dormant_server_long_polls_woken_total"), 0);
}

// The database goes away under a replica: it answers 503 with Retry-After meanwhile, and serves
// again by itself once the database is back.
TEST_F(ServerTest, WhileItsDatabaseIsDownTheServerAnswers503AndRecoversByItself) {
  if (std::string why = PostgresCluster::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto cluster = PostgresCluster::start();
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  auto url = (*cluster)->create_database();
  ASSERT_TRUE(url.ok()) << url.error().message();
  start({"--database", *url});
  beat("web-01");
  ASSERT_TRUE((*cluster)->stop().ok());
  HttpReply down = server_->post_json("/api/metrics/heartbeat", agent_heartbeat("web-01"));
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_EQ(server_->get("/api/hosts").status, 503);
  ASSERT_TRUE((*cluster)->restart().ok());
  EXPECT_TRUE(eventually(
      [&] {
        return server_->post_json("/api/metrics/heartbeat", agent_heartbeat("web-01")).status ==
               200;
      },
      30s))
      << server_->log();
  EXPECT_EQ(server_->get("/api/hosts").json()["hosts"].size(), 1u);
}

}  // namespace
}  // namespace dormant::testing
