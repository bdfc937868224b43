// The sender of completions and uploads: oldest first, kept and retried with backoff while the
// server cannot take a message, settled by its answer, silent once stopped.
#include "heartbeat/retrying_sender.h"

#include <deque>

#include <gtest/gtest.h>

#include "scripted_client.h"

namespace dormant::heartbeat {
namespace {

using namespace std::chrono_literals;

class RetryingSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = std::make_shared<ScriptedClient>(io_, HttpReply{200, "{}"});
    RetryPolicy policy;
    policy.interval = 5ms;
    policy.max_backoff = 20ms;
    policy.jitter = 0;
    sender_ = RetryingSender::make(io_, client_, RetryTimer(policy), "test message",
                                   [this]() -> std::optional<RetryingSender::Message> {
                                     if (queue_.empty()) return std::nullopt;
                                     std::string body = queue_.front();
                                     return RetryingSender::Message{
                                         {"/api/test", body, {}},
                                         [this, body](const HttpReply&) {
                                           delivered_.push_back(body);
                                           queue_.pop_front();
                                         },
                                         [this, body](const std::string& why) {
                                           refused_.push_back(body + ": " + why);
                                           queue_.pop_front();
                                         }};
                                   });
  }

  void run_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io_.run_for(1ms);
  }

  boost::asio::io_context io_;
  std::shared_ptr<ScriptedClient> client_;
  std::shared_ptr<RetryingSender> sender_;
  std::deque<std::string> queue_;
  std::vector<std::string> delivered_;
  std::vector<std::string> refused_;
};

TEST_F(RetryingSenderTest, DeliversTheQueueOldestFirst) {
  queue_ = {"first", "second", "third"};
  sender_->kick();
  run_until([&] { return queue_.empty(); });
  EXPECT_EQ(delivered_, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(client_->bodies, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_FALSE(sender_->busy());
}

TEST_F(RetryingSenderTest, AnOutageKeepsTheMessageAndItGoesOnceTheServerIsBack) {
  client_->script.push_back(Error(ErrorKind::kNetwork, "connecting to studio:443: refused"));
  client_->script.push_back(HttpReply{503, "busy"});
  client_->script.push_back(HttpReply{429, "slow down"});
  queue_ = {"owed"};
  sender_->kick();
  run_until([&] { return sender_->consecutive_failures() == 3; });
  EXPECT_EQ(sender_->consecutive_failures(), 3);
  EXPECT_NE(sender_->last_error().find("429"), std::string::npos) << sender_->last_error();
  EXPECT_EQ(queue_.size(), 1u) << "nothing is lost while the server cannot take it";
  run_until([&] { return queue_.empty(); });
  EXPECT_EQ(delivered_, (std::vector<std::string>{"owed"}));
  EXPECT_EQ(sender_->consecutive_failures(), 0);
  EXPECT_TRUE(sender_->last_error().empty());
  EXPECT_EQ(client_->bodies.size(), 4u);
}

// A token the server does not take (yet): rotated on one side first, fixed by SIGHUP or by the
// server's tokens file. What waits is kept and goes once the token is taken.
TEST_F(RetryingSenderTest, ARefusedTokenKeepsTheMessageUntilTheServerTakesIt) {
  client_->script.push_back(HttpReply{401, "a valid API token is required"});
  client_->script.push_back(HttpReply{403, "forbidden"});
  queue_ = {"profile"};
  sender_->kick();
  run_until([&] { return queue_.empty(); });
  EXPECT_TRUE(refused_.empty());
  EXPECT_EQ(delivered_, (std::vector<std::string>{"profile"}));
  EXPECT_EQ(client_->bodies.size(), 3u);
}

// A misconfigured or misdirected server (a redirect, a path not served yet, a proxy asking for
// its own credentials) must not cost what waits: only a server that calls the message itself
// wrong settles it.
TEST_F(RetryingSenderTest, OnlyAMessageTheServerCallsWrongIsGivenUp) {
  for (unsigned status : {301u, 302u, 307u, 308u, 401u, 403u, 404u, 405u, 407u, 408u, 410u, 421u,
                          425u, 429u, 500u, 502u, 503u, 504u}) {
    client_->script.push_back(HttpReply{status, "not now"});
  }
  queue_ = {"kept"};
  sender_->kick();
  run_until([&] { return queue_.empty(); });
  EXPECT_TRUE(refused_.empty()) << refused_.front();
  EXPECT_EQ(delivered_, (std::vector<std::string>{"kept"}));
  EXPECT_EQ(client_->bodies.size(), 19u);

  for (unsigned status : {400u, 413u, 415u, 422u}) {
    client_->script.push_back(HttpReply{status, "never"});
    queue_.push_back("refused " + std::to_string(status));
  }
  io_.restart();  // it ran out of work with the queue empty
  sender_->kick();
  run_until([&] { return queue_.empty(); });
  EXPECT_EQ(refused_.size(), 4u);
  EXPECT_EQ(client_->bodies.size(), 23u) << "each refused message was sent once";
}

TEST_F(RetryingSenderTest, ARefusalSettlesTheMessageAndTheNextGoes) {
  client_->script.push_back(HttpReply{400, "malformed"});
  queue_ = {"bad", "good"};
  sender_->kick();
  run_until([&] { return queue_.empty(); });
  ASSERT_EQ(refused_.size(), 1u);
  EXPECT_TRUE(refused_[0].starts_with("bad: ")) << refused_[0];
  EXPECT_EQ(delivered_, (std::vector<std::string>{"good"}));
}

TEST_F(RetryingSenderTest, NoCallbackRunsOnceStopped) {
  client_->script.push_back(HttpReply{503, "busy"});
  queue_ = {"owed"};
  sender_->kick();
  run_until([&] { return sender_->consecutive_failures() == 1; });
  sender_->stop();
  io_.run_for(50ms);
  EXPECT_TRUE(delivered_.empty());
  EXPECT_EQ(queue_.size(), 1u) << "kept for the next run of the agent";
}

}  // namespace
}  // namespace dormant::heartbeat
