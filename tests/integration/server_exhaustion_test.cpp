// dormant-server under the attacks that take what every client shares: connection slots and
// the bodies being received. The real binary on plain HTTP, raw sockets from several loopback
// addresses (each another host to the server).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include "server_fixture.h"
#include "tests/support/postgres_cluster.h"
#include "tests/support/raw_http.h"

namespace dormant::testing {
namespace {

using nlohmann::json;

class ServerExhaustionTest : public ServerFixture {
 protected:
  ServerExhaustionTest() : ServerFixture("dormant-server-exhaustion-") {}

  // A heartbeat as gProfiler's agent sends it, as a whole request on the wire.
  static std::string heartbeat_request(const std::string& hostname, const std::string& query = "") {
    json body = {{"hostname", hostname},
                 {"ip_address", "10.0.0.7"},
                 {"service_name", "web"},
                 {"last_command_id", nullptr},
                 {"status", "active"},
                 {"timestamp", "2026-11-22T10:00:00.123456"},
                 {"received_command_ids", json::array()},
                 {"executed_command_ids", json::array()}};
    std::string text = body.dump();
    return "POST /api/metrics/heartbeat" + query + " HTTP/1.1\r\nHost: x\r\n" +
           "Authorization: Bearer " + kToken + "\r\nContent-Type: application/json\r\n" +
           "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  }

  // The head of an upload that announces `bytes` and sends none of them yet.
  static std::string upload_head(const std::string& token, size_t bytes) {
    return "POST /api/v2/profiles?service=web&hostname=x HTTP/1.1\r\nHost: x\r\n"
           "GPROFILER-API-KEY: " +
           token + "\r\nContent-Encoding: gzip\r\nExpect: 100-continue\r\nContent-Length: " +
           std::to_string(bytes) + "\r\n\r\n";
  }

  static std::string loopback(int n) { return "127.0.0." + std::to_string(n); }

  // An upload of `stacks` from `hostname` to `service`, as gProfiler's agent sends it.
  static std::string upload_request(const std::string& service, const std::string& hostname,
                                    const std::string& stacks) {
    std::string body = gzip(upload_body(hostname, collapsed_profile(hostname, stacks)).dump());
    return "POST /api/v2/profiles HTTP/1.1\r\nHost: x\r\nGPROFILER-API-KEY: " +
           std::string(kToken) + "\r\nGPROFILER-SERVICE-NAME: " + service +
           "\r\nContent-Encoding: gzip\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  // One request with the operator's token on a connection of its own; the answer's status and
  // body (read to its Content-Length).
  std::pair<int, std::string> call(const std::string& method, const std::string& path,
                                   const std::string& body = "") {
    return send(method + " " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                "\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
  }

  // A whole request on a connection of its own; the answer's status and body.
  std::pair<int, std::string> send(const std::string& request) {
    UniqueFd socket = connect_from("127.0.0.1", server_->port(), std::chrono::seconds(120));
    if (!send_text(socket, request)) return {0, ""};
    std::string head = read_head(socket);
    size_t at = head.find("Content-Length: ");
    size_t length = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
    std::string text(length, '\0');
    size_t got = 0;
    while (got < length) {
      ssize_t n = ::read(socket.get(), text.data() + got, length - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    return {status_of(head), text};
  }

  // A line of /proc/PID/status, in kB.
  static int64_t status_kb(pid_t pid, const std::string& name) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with(name + ":")) return std::stoll(line.substr(name.size() + 1));
    }
    return -1;
  }
};

// 64 connections from one address, each announcing a 4 MiB upload and trickling it, took the whole
// in-flight budget: every other host's heartbeat got 503 while it lasted. Now that address holds
// 16 MiB, its token as much from anywhere, and heartbeats keep a reserve uploads cannot take.
TEST_F(ServerExhaustionTest, TrickledUploadsFromOneAddressLeaveOtherHostsHeartbeatsAlone) {
  start({"--insecure-http", "--max-inflight-body-mb", "256", "--max-body-bytes", "4194304"});
  constexpr size_t kAnnounced = 4 << 20;
  std::vector<UniqueFd> attackers;
  int continued = 0, refused = 0;
  for (int i = 0; i < 64; ++i) {
    attackers.push_back(connect_from("127.0.0.2", server_->port()));
    ASSERT_TRUE(send_text(attackers.back(), upload_head(kToken, kAnnounced)));
    int status = status_of(read_head(attackers.back()));
    continued += status == 100 ? 1 : 0;
    refused += status == 503 ? 1 : 0;
  }
  EXPECT_EQ(continued, 4) << "one address holds 16 MiB of bodies";
  EXPECT_EQ(refused, 60);
  std::atomic<bool> attacking{true};
  std::thread trickle([&] {  // the minimum body rate (16 KiB/s), so that none times out
    const std::string piece(4096, 'x');
    while (attacking) {
      for (auto& attacker : attackers) send_text(attacker, piece);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  UniqueFd same_token = connect_from("127.0.0.3", server_->port());
  ASSERT_TRUE(send_text(same_token, upload_head(kToken, kAnnounced)));
  EXPECT_EQ(status_of(read_head(same_token)), 503) << "the token's share is held from elsewhere";
  UniqueFd other_token = connect_from("127.0.0.3", server_->port());
  ASSERT_TRUE(send_text(other_token, upload_head("second-token", kAnnounced)));
  EXPECT_EQ(status_of(read_head(other_token)), 100) << "another agent token's upload goes on";

  int answered = 0;
  for (int host = 0; host < 100; ++host) {
    UniqueFd agent = connect_from(loopback(10 + host).c_str(), server_->port());
    ASSERT_TRUE(send_text(agent, heartbeat_request("host-" + std::to_string(host))));
    answered += status_of(read_head(agent)) == 200 ? 1 : 0;
  }
  attacking = false;
  trickle.join();
  EXPECT_GE(answered, 99) << "of 100 other hosts' heartbeats";
}

// Held heartbeats were never let go: 256 of them from 4 addresses closed every new client at
// --max-connections 256. Now at most half the connections and 8 per address are held, and at the
// cap the one held the longest is answered (200, no command) to make room.
TEST_F(ServerExhaustionTest, LongPollsCannotTakeEveryConnection) {
  start({"--insecure-http", "--max-connections", "32", "--max-connections-per-address", "0",
         "--long-poll-max", "60"});
  std::vector<UniqueFd> polls;
  std::vector<UniqueFd> answered_at_once;
  for (int address = 0; address < 4; ++address) {
    for (int i = 0; i < 10; ++i) {
      UniqueFd poll = connect_from(loopback(2 + address).c_str(), server_->port(),
                                   std::chrono::milliseconds(300));
      std::string host = "poll-" + std::to_string(address) + "-" + std::to_string(i);
      ASSERT_TRUE(send_text(poll, heartbeat_request(host, "?wait=60")));
      // Not answered within 300 ms: held.
      if (status_of(read_head(poll)) == 200) {
        answered_at_once.push_back(std::move(poll));
      } else {
        polls.push_back(std::move(poll));
      }
    }
  }
  EXPECT_EQ(polls.size(), 16u) << "half of 32 connections, 8 per address at most";
  EXPECT_EQ(answered_at_once.size(), 24u);
  answered_at_once.clear();
  // The rest of the cap, from the same addresses: headers begun and never finished.
  std::vector<UniqueFd> half_sent;
  for (int i = 0; i < 16; ++i) {
    half_sent.push_back(connect_from(loopback(2 + i % 4).c_str(), server_->port()));
    ASSERT_TRUE(send_text(half_sent.back(), "POST /api/metrics/heartbeat HTTP/1.1\r\nHost: x\r\n"));
  }
  // Each newcomer is served well before the header deadline (10 s) would have freed a slot.
  int served = 0;
  for (int i = 0; i < 10; ++i) {
    UniqueFd newcomer = connect_from("127.0.0.99", server_->port(), std::chrono::seconds(5));
    ASSERT_TRUE(send_text(newcomer, heartbeat_request("newcomer-" + std::to_string(i))));
    served += status_of(read_head(newcomer)) == 200 ? 1 : 0;
  }
  EXPECT_EQ(served, 10);
  std::string released = read_head(polls.front());
  EXPECT_EQ(status_of(released), 200) << "the oldest held poll was answered: " << released;
  EXPECT_NE(released.find("Connection: close"), std::string::npos) << released;
}

// GET /api/commands?limit=10000 after one 10,000-host request with 64 kB of arguments was 624 MB
// of JSON and +3.2 GB of server memory; two at once +5.1 GB while a heartbeat waited 13.9 s. A
// listing is now written a batch of rows at a time into pages of 16 MiB at most, each with the
// cursor of the next, and a request's arguments are written once a page, referred to by each of
// its commands: two maximal listings at once cost at most +256 MB, and a heartbeat is answered
// meanwhile.
TEST_F(ServerExhaustionTest, TwoMaximalListingsAtOnceStayWithinTheirBoundInMemory) {
  // ASan's quarantine would hold every freed byte for a while: off, the peak is what is live.
  const char* inherited = std::getenv("ASAN_OPTIONS");
  std::string asan = std::string(inherited ? inherited : "") +
                     ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
  ASSERT_TRUE(server_->start({"--insecure-http", "--threads", "4"}, 0, {"ASAN_OPTIONS=" + asan}))
      << server_->log();
  nlohmann::json request = {{"service_name", "web"},
                            {"request_type", "start"},
                            {"continuous", true},
                            {"additional_args", {{"junk", std::string(60000, 'j')}}},
                            {"target_hosts", nlohmann::json::object()}};
  for (int i = 0; i < 10000; ++i) request["target_hosts"]["host-" + std::to_string(i)] = nullptr;
  auto [made, made_body] = call("POST", "/api/metrics/profile_request", request.dump());
  ASSERT_EQ(made, 200) << made_body.substr(0, 300);

  const pid_t pid = server_->pid();
  {
    std::ofstream reset("/proc/" + std::to_string(pid) + "/clear_refs");
    reset << "5";  // VmHWM from now (root only; else it counts from the start, a harder bound)
  }
  const int64_t before_kb = status_kb(pid, "VmRSS");
  std::vector<std::pair<int, std::string>> pages(2);
  std::vector<std::thread> readers;
  for (auto& page : pages) {
    readers.emplace_back([&page, this] { page = call("GET", "/api/commands?limit=10000"); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto begun = std::chrono::steady_clock::now();
  UniqueFd agent = connect_from("127.0.0.2", server_->port(), std::chrono::seconds(60));
  ASSERT_TRUE(send_text(agent, heartbeat_request("host-7")));
  EXPECT_EQ(status_of(read_head(agent)), 200);
  double heartbeat_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  for (auto& reader : readers) reader.join();
  const int64_t peak_kb = status_kb(pid, "VmHWM");

  for (const auto& [status, body] : pages) {
    ASSERT_EQ(status, 200);
    EXPECT_LE(body.size(), size_t{16} << 20);
    auto page = nlohmann::json::parse(body);
    ASSERT_EQ(page["commands"].size(), 10000u) << "the arguments are not repeated";
    const nlohmann::json& command = page["commands"][0];
    EXPECT_FALSE(command["combined_config"].contains("junk"));
    EXPECT_EQ(command["combined_config"]["continuous"], true) << "the store's own keys stay";
    ASSERT_TRUE(command["args_digest"].is_string());
    ASSERT_EQ(page["additional_args"].size(), 1u) << "once a page";
    EXPECT_EQ(page["additional_args"][command["args_digest"].get<std::string>()]["junk"],
              std::string(60000, 'j'));
  }
  std::printf(
      "two listings of %zu and %zu bytes: server peak +%lld MB over %lld MB; a heartbeat "
      "meanwhile answered in %.3f s\n",
      pages[0].second.size(), pages[1].second.size(),
      static_cast<long long>((peak_kb - before_kb) / 1024),
      static_cast<long long>(before_kb / 1024), heartbeat_s);
  EXPECT_LE(peak_kb - before_kb, 256 * 1024);
}

// A table locked for 20 s held every heartbeat 19.1 s and the health check 18.1 s. Now a lock is
// waited for 3 s and a connection 2 s, then the request is answered 503 with Retry-After; the
// health check, which needs no database, answers meanwhile. Both while the lock is still held.
TEST_F(ServerExhaustionTest, ALockedTableGets503InBoundedTimeWhileTheHealthCheckAnswers) {
  if (std::string why = PostgresCluster::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  auto cluster = PostgresCluster::start();
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  auto url = (*cluster)->create_database();
  ASSERT_TRUE(url.ok()) << url.error().message();
  start({"--insecure-http", "--database", *url, "--threads", "2", "--database-connections", "2"});
  auto heartbeat = [&](const std::string& host) {
    UniqueFd agent = connect_from("127.0.0.2", server_->port(), std::chrono::seconds(60));
    send_text(agent, heartbeat_request(host));
    return read_head(agent);
  };
  ASSERT_EQ(status_of(heartbeat("web-01")), 200);

  std::unique_ptr<PGconn, decltype(&PQfinish)> locker(PQconnectdb(url->c_str()), PQfinish);
  ASSERT_EQ(PQstatus(locker.get()), CONNECTION_OK) << PQerrorMessage(locker.get());
  PQclear(PQexec(locker.get(), "BEGIN; LOCK TABLE hosts IN ACCESS EXCLUSIVE MODE"));
  std::atomic<bool> locked{true};

  // Four agents at once on two threads and two connections: each waits for the lock or for a
  // connection, a bounded time.
  std::vector<std::string> answers(4);
  std::vector<double> seconds(4);
  std::vector<std::thread> agents;
  for (size_t i = 0; i < answers.size(); ++i) {
    agents.emplace_back([&, i] {
      auto begun = std::chrono::steady_clock::now();
      answers[i] = heartbeat("web-0" + std::to_string(i + 2));
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
      EXPECT_TRUE(locked) << "answered only once the lock was let go";
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  UniqueFd probe = connect_from("127.0.0.3", server_->port(), std::chrono::seconds(60));
  auto begun = std::chrono::steady_clock::now();
  ASSERT_TRUE(send_text(probe, "GET /api/v1/health_check HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(status_of(read_head(probe)), 200);
  double health_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  EXPECT_TRUE(locked);
  for (auto& agent : agents) agent.join();
  locked = false;
  PQclear(PQexec(locker.get(), "COMMIT"));
  for (size_t i = 0; i < answers.size(); ++i) {
    EXPECT_EQ(status_of(answers[i]), 503) << answers[i];
    EXPECT_NE(answers[i].find("Retry-After:"), std::string::npos) << answers[i];
    std::printf("heartbeat %zu answered %d after %.2f s\n", i, status_of(answers[i]), seconds[i]);
  }
  std::printf("health check answered after %.2f s with the table locked\n", health_s);
  EXPECT_EQ(status_of(heartbeat("web-01")), 200) << "served again once the lock is let go";
}

// Issue 40: a merge ran on the one render thread of a 2-core server, so that another profile's
// pprof waited 13.3 s, and it took a core from the heartbeats. Merges now have a (niced) thread
// of their own. While a merge of 60,000 distinct stacks runs, heartbeats and another profile's
// pprof are answered each within a fraction of the merge's time; their figures are printed beside
// those of the same requests with no merge.
TEST_F(ServerExhaustionTest, AMergeDelaysNeitherHeartbeatsNorAnotherRender) {
  // A connection a request: on a loaded machine the server may see the last ones closed late.
  // Its profiles are of 2026-11-22: rollups kept for ever, so that the test never outlives them.
  start({"--insecure-http", "--threads", "2", "--max-connections-per-address", "0",
         "--minute-rollup-days", "0", "--hour-rollup-days", "0", "--day-rollup-days", "0"});
  // 500 stacks of 40 frames a profile, 0.6 MB of text, each host's own: merges read rollups,
  // whose cost follows the distinct stacks (60,000 here).
  for (int host = 0; host < 120; ++host) {
    std::string busy;
    for (int stack = 0; stack < 500; ++stack) {
      busy += "0;;java";
      for (int frame = 0; frame < 40; ++frame) {
        busy += ";com.example.service.Handler" + std::to_string((stack + frame) % 97) + ".run";
      }
      busy += ";stack" + std::to_string(stack) + "_host" + std::to_string(host) + " 3\n";
    }
    auto [status, body] = send(upload_request("busy", "busy-" + std::to_string(host), busy));
    ASSERT_EQ(status, 200) << body;
  }
  auto [uploaded, answer] = send(upload_request("web", "web-01", "0;;nginx;main;serve 3\n"));
  ASSERT_EQ(uploaded, 200) << answer;
  const std::string pprof =
      "/api/profiles/" + std::to_string(json::parse(answer)["gpid"].get<int64_t>()) + "/pprof";

  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point begun) {
    return std::chrono::duration<double>(Clock::now() - begun).count();
  };
  // The time a heartbeat and another profile's pprof take, each on a new connection.
  auto heartbeat = [&] {
    auto begun = Clock::now();
    UniqueFd agent = connect_from("127.0.0.2", server_->port(), std::chrono::seconds(120));
    EXPECT_TRUE(send_text(agent, heartbeat_request("web-01")));
    EXPECT_EQ(status_of(read_head(agent)), 200);
    return seconds_since(begun);
  };
  auto render = [&] {
    auto begun = Clock::now();
    EXPECT_EQ(call("GET", pprof).first, 200);
    return seconds_since(begun);
  };
  std::vector<double> idle_beats, idle_renders, beats, renders;
  for (int i = 0; i < 10; ++i) {
    idle_beats.push_back(heartbeat());
    idle_renders.push_back(render());
  }

  std::atomic<bool> merging{true};
  int merged = 0;
  int64_t merged_lines = 0;
  double merge_s = 0;
  std::thread merge([&] {
    auto begun = Clock::now();
    auto [status, text] = call("GET",
                               "/api/flamegraph?service=busy&format=collapsed"
                               "&since=2026-11-22T00:00:00Z&until=2026-11-23T00:00:00Z");
    merged = status;
    merged_lines = std::count(text.begin(), text.end(), '\n');
    merge_s = seconds_since(begun);
    merging = false;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  while (merging) {  // what is asked for after the merge ended is left out
    bool during = merging;
    double beat = heartbeat();
    if (during) beats.push_back(beat);
    during = merging;
    double drawn = render();
    if (during) renders.push_back(drawn);
  }
  merge.join();

  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
  };
  auto most = [](const std::vector<double>& values) {
    return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
  };
  std::printf(
      "a merge of 120 profiles (60,000 distinct stacks, 70 MB of text) took %.2f s; meanwhile "
      "%zu heartbeats took "
      "median %.1f ms, at most %.1f ms (with no merge: %.1f, %.1f) and %zu pprofs of another "
      "profile median %.1f ms, at most %.1f ms (with no merge: %.1f, %.1f)\n",
      merge_s, beats.size(), 1e3 * median(beats), 1e3 * most(beats), 1e3 * median(idle_beats),
      1e3 * most(idle_beats), renders.size(), 1e3 * median(renders), 1e3 * most(renders),
      1e3 * median(idle_renders), 1e3 * most(idle_renders));
  ASSERT_EQ(merged, 200);
  EXPECT_EQ(merged_lines, 1 + 120 * 500) << "the header and every stack";
  EXPECT_LT(most(beats), merge_s / 4) << "a heartbeat waited for the merge";
  EXPECT_LT(most(renders), merge_s / 4) << "a render waited for the merge";
  EXPECT_GE(renders.size(), 3u) << "the merge must last long enough to measure beside it";
}

}  // namespace
}  // namespace dormant::testing
