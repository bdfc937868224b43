// Attack: a hostile control server (or anyone on the path of a plain-HTTP one) answers heartbeats,
// completions and uploads with bodies built to become huge JSON trees: 16 MiB of "{},", a
// megabyte of it within the size limit, a megabyte of nesting. Each used to become a DOM of up to
// 1.2 GB. Bound: any reply costs the process at most 16 MB over what it held before, the agent
// says what was wrong and goes on (the next heartbeat works, the profile stays spooled), and its
// private memory (USS) returns to what it was idle. Real client and loop, a server that streams
// its replies so that they cost it nothing. Under AddressSanitizer the heap's own bytes are
// measured instead (memory_meter.h).
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "fake_backoff_time.h"
#include "streaming_reply_server.h"
#include "tests/support/memory_meter.h"

#include "agent/command_journal.h"
#include "agent/profile_spool.h"
#include "heartbeat/delivery_senders.h"
#include "heartbeat/heartbeat_loop.h"

namespace dormant::heartbeat {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr uint64_t kMaxReplyCostKb = 16 << 10;  // 16 MB, the issue's bound
// What "back to idle" allows: the allocator's bookkeeping, not a reply's worth.
constexpr int64_t kIdleSlackKb = 1 << 10;

const ScriptedReply kNoCommand{
    200, R"({"success":true,"message":"no command","command_id":null,"profiling_command":null})",
    "", "", 0};

wire::HeartbeatRequest web_01() {
  wire::HeartbeatRequest request;
  request.hostname = "web-01";
  request.service_name = "web";
  request.ip_address = "10.0.0.7";
  return request;
}

void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();  // a run with nothing to do (backing off on fake time) stops the context
    io.run_for(1ms);
  }
}

struct Attack {
  const char* name;
  ScriptedReply reply;
  const char* error;  // what the agent says of it; "" when the reply is taken
};

class HostileHeartbeatReplyTest : public ::testing::TestWithParam<Attack> {};

TEST_P(HostileHeartbeatReplyTest, CostsAtMost16MbAndTheAgentGoesOn) {
  const Attack& attack = GetParam();
  StreamingReplyServer server(kNoCommand);
  boost::asio::io_context io;
  auto url = parse_server_url(server.url());
  ASSERT_TRUE(url.ok());
  auto client = HttpsClient::make(io, *url, nullptr, {});
  ASSERT_TRUE(client.ok());
  RetryPolicy policy;
  policy.interval = 5ms;
  policy.max_backoff = 5ms;
  policy.jitter = 0;
  int answers = 0;
  auto loop = HeartbeatLoop::make(io, *client, RetryTimer(policy), web_01,
                                  [&](const wire::HeartbeatResponse&) { ++answers; });
  loop->start();
  run_until(io, [&] { return answers >= 5; });
  ASSERT_GE(answers, 5);
  int64_t idle = testing::MemoryMeter::held_kb();

  server.push(attack.reply);
  testing::MemoryMeter meter;
  int requests = server.requests();
  int answers_before = answers;
  std::string said;
  run_until(io, [&] {
    if (said.empty()) said = loop->last_error();
    return server.requests() >= requests + 2 && answers > answers_before;
  });
  uint64_t cost = meter.peak_growth_kb();
  RecordProperty("peak_cost_kb", std::to_string(cost));
  std::printf("%s: peak +%llu kB (%s)\n", attack.name, static_cast<unsigned long long>(cost),
              testing::MemoryMeter::measure());
  EXPECT_LE(cost, kMaxReplyCostKb) << attack.name;
  EXPECT_GT(answers, answers_before) << "the next heartbeat is answered";
  if (*attack.error) {
    EXPECT_NE(said.find(attack.error), std::string::npos) << said;
  } else {
    EXPECT_EQ(said, "");
  }

  int settled = answers;
  run_until(io, [&] { return answers >= settled + 5; });
  int64_t held = testing::MemoryMeter::held_kb();
  std::printf("%s: %lld kB idle, %lld kB after (%s)\n", attack.name, static_cast<long long>(idle),
              static_cast<long long>(held), testing::MemoryMeter::measure());
  EXPECT_LE(held, idle + kIdleSlackKb) << "back to what it held idle";
  loop->stop();
}

INSTANTIATE_TEST_SUITE_P(
    Replies, HostileHeartbeatReplyTest,
    ::testing::Values(
        Attack{"16 MiB of objects", many_objects(16 << 20), "body limit exceeded"},
        Attack{"1 MiB of objects", many_objects(1 << 20), "holds more than 50000 values"},
        Attack{"1 MiB of nesting", deep_arrays(1 << 20), "nested deeper than 64 levels"},
        Attack{"a 1 MiB message",
               {200, R"({"success":true,"command_id":null,"message":")", "x", "\"}", 1 << 20},
               ""}),
    [](const auto& info) {
      std::string name = info.param.name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

class HostileDeliveryReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-hostile-reply-" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::shared_ptr<HttpsClient> client(const StreamingReplyServer& server) {
    auto url = parse_server_url(server.url());
    EXPECT_TRUE(url.ok());
    auto made = HttpsClient::make(io_, *url, nullptr, {});
    EXPECT_TRUE(made.ok());
    return *made;
  }

  fs::path root_;
  boost::asio::io_context io_;
  FakeBackoffTime time_{io_};
  RetryTimer retry_{RetryPolicy{}};
};

// An upload's answer is a gpid: a megabyte is refused as it arrives, and the profile stays
// spooled for the next try.
TEST_F(HostileDeliveryReplyTest, AnUploadReplyPast64KibCostsLittleAndKeepsTheProfile) {
  StreamingReplyServer server({200, R"({"gpid": 5})", "", "", 0});
  auto spool = agent::ProfileSpool::open(root_ / "spool", 1 << 20);
  ASSERT_TRUE(spool.ok());
  wire::ProfileUpload upload;
  upload.start_time = upload.end_time = "2026-11-26T10:00:00";
  upload.hostname = "web-01";
  upload.profile = "# {}\napp;main 1\n";
  ASSERT_TRUE((*spool)->add(*wire::compress_upload(upload)).ok());
  UploadIdentity identity{"token", "web", "web-01", "test"};
  auto uploads = make_upload_sender(io_, client(server), retry_, **spool, identity, time_.timer());
  server.push(many_objects(1 << 20));

  testing::MemoryMeter meter;
  uploads->kick();
  run_until(io_, [&] { return uploads->backing_off(); });
  uint64_t cost = meter.peak_growth_kb();
  std::printf("upload reply of 1 MiB: peak +%llu kB\n", static_cast<unsigned long long>(cost));
  EXPECT_LE(cost, kMaxReplyCostKb);
  EXPECT_NE(uploads->last_error().find("body limit exceeded"), std::string::npos)
      << uploads->last_error();
  EXPECT_EQ((*spool)->files(), 1u) << "kept for the next try";

  time_.advance_to_next();
  run_until(io_, [&] { return (*spool)->files() == 0; });
  EXPECT_EQ((*spool)->files(), 0u) << "delivered once the server answers sanely";
  uploads->stop();
}

TEST_F(HostileDeliveryReplyTest, ACompletionReplyOfAMegabyteOfObjectsCostsLittle) {
  StreamingReplyServer server({200, R"({"success": true})", "", "", 0});
  auto journal = agent::CommandJournal::open(root_ / "journal.json");
  journal.record_completion({"00000000-0000-4000-8000-000000000001", "web-01",
                             wire::CompletionStatus::kCompleted, 1, std::nullopt, std::nullopt});
  auto completions = make_completion_sender(io_, client(server), retry_, journal, time_.timer());
  server.push(many_objects(1 << 20));

  testing::MemoryMeter meter;
  completions->kick();
  run_until(io_, [&] { return journal.owed().empty(); });
  uint64_t cost = meter.peak_growth_kb();
  std::printf("completion reply of 1 MiB: peak +%llu kB\n", static_cast<unsigned long long>(cost));
  EXPECT_LE(cost, kMaxReplyCostKb);
  EXPECT_TRUE(journal.owed().empty()) << "answered 200: settled, with a warning";
  completions->stop();
}

}  // namespace
}  // namespace dormant::heartbeat
