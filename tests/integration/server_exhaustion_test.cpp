// dormant-server under the attacks that take what every client shares: connection slots and
// the bodies being received. The real binary on plain HTTP, raw sockets from several loopback
// addresses (each another host to the server).
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server_fixture.h"
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

}  // namespace
}  // namespace dormant::testing
