#include "heartbeat/heartbeat_loop.h"

#include <deque>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "scripted_client.h"

namespace dormant::heartbeat {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNoCommand =
    R"({"success":true,"message":"Heartbeat received. No profiling commands.","command_id":null,"profiling_command":null})";

wire::HeartbeatRequest web_01() {
  wire::HeartbeatRequest request;
  request.hostname = "web-01";
  request.service_name = "web";
  request.ip_address = "10.0.0.7";
  return request;
}

class HeartbeatLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
    previous_ = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>("test", log_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
    client_ = std::make_shared<ScriptedClient>(io_, HttpReply{200, kNoCommand});
    RetryPolicy policy;
    policy.interval = 5ms;
    policy.max_backoff = 20ms;
    policy.jitter = 0;
    loop_ = HeartbeatLoop::make(
        io_, client_, RetryTimer(policy), web_01,
        [this](const wire::HeartbeatResponse& answer) { answers_.push_back(answer); });
  }
  void TearDown() override { spdlog::set_default_logger(previous_); }

  // Runs the io_context until `done` holds (or 5 s).
  void run_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io_.run_for(1ms);
  }

  int log_lines_with(const std::string& text) {
    int count = 0;
    for (const std::string& line : log_->last_formatted()) count += line.find(text) != line.npos;
    return count;
  }

  boost::asio::io_context io_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> log_;
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<ScriptedClient> client_;
  std::shared_ptr<HeartbeatLoop> loop_;
  std::vector<wire::HeartbeatResponse> answers_;
};

TEST_F(HeartbeatLoopTest, SendsTheAgentsHeartbeatAndHandsOverEachAnswer) {
  client_->script.push_back(HttpReply{200, R"({"success":true,"message":"m",
      "command_id":"6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79",
      "profiling_command":{"command_type":"start","combined_config":{"duration":60}}})"});
  loop_->start();
  run_until([&] { return answers_.size() >= 2; });
  loop_->stop();
  ASSERT_GE(answers_.size(), 2u);
  EXPECT_EQ(answers_[0].command_id, "6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79");
  EXPECT_EQ(answers_[0].profiling_command->combined_config["duration"], 60);
  EXPECT_FALSE(answers_[1].profiling_command.has_value());
  EXPECT_EQ(client_->paths[0], "/api/metrics/heartbeat");
  auto body = nlohmann::json::parse(client_->bodies[0]);
  EXPECT_EQ(body["hostname"], "web-01");
  EXPECT_EQ(body["service_name"], "web");
}

// A server that offers long-polls is asked to hold the next heartbeat (up to the interval); one
// that stops offering them (a failover to Performance Studio) is polled plainly again. Under a
// second of interval, there is no hold to ask for.
TEST_F(HeartbeatLoopTest, AsksForAHoldOnlyWhereTheServerOffersOne) {
  HttpReply offering{200, kNoCommand};
  offering.headers = {{"x-dormant-long-poll", "30"}};
  client_->script = {offering, offering, HttpReply{200, kNoCommand}};
  RetryPolicy policy;
  policy.interval = 1s;
  policy.jitter = 0;
  auto loop = HeartbeatLoop::make(io_, client_, RetryTimer(policy), web_01,
                                  [](const wire::HeartbeatResponse&) {});
  loop->start();
  run_until([&] { return client_->paths.size() >= 4; });
  loop->stop();
  ASSERT_GE(client_->paths.size(), 4u);
  EXPECT_EQ(client_->paths[0], "/api/metrics/heartbeat");
  EXPECT_EQ(client_->paths[1], "/api/metrics/heartbeat?wait=1");  // the interval
  EXPECT_EQ(client_->paths[2], "/api/metrics/heartbeat?wait=1");
  EXPECT_EQ(client_->paths[3], "/api/metrics/heartbeat");
}

// The first answer's offer is taken at once: a command sent right after the agent starts does
// not wait out an interval (here a minute) before the agent's first long-poll.
TEST_F(HeartbeatLoopTest, TheFirstOfferIsTakenWithoutWaitingAnInterval) {
  HttpReply offering{200, kNoCommand};
  offering.headers = {{"x-dormant-long-poll", "60"}};
  client_->script = {offering};
  RetryPolicy policy;
  policy.interval = 60s;
  policy.jitter = 0;
  auto loop = HeartbeatLoop::make(io_, client_, RetryTimer(policy), web_01,
                                  [](const wire::HeartbeatResponse&) {});
  loop->start();
  run_until([&] { return client_->paths.size() >= 2; });
  loop->stop();
  ASSERT_EQ(client_->paths.size(), 2u);
  EXPECT_EQ(client_->paths[1], "/api/metrics/heartbeat?wait=60");
}

TEST_F(HeartbeatLoopTest, UnderASecondOfIntervalTheServersOfferIsNotTaken) {
  HttpReply offering{200, kNoCommand};
  offering.headers = {{"X-Dormant-Long-Poll", "30"}};
  client_->script = {offering, offering};
  loop_->start();  // its interval is 5 ms
  run_until([&] { return client_->paths.size() >= 3; });
  loop_->stop();
  ASSERT_GE(client_->paths.size(), 3u);
  for (const std::string& path : client_->paths) EXPECT_EQ(path, "/api/metrics/heartbeat");
}

TEST_F(HeartbeatLoopTest, FailuresBackOffLogOnceAndRecover) {
  client_->script.push_back(Error(ErrorKind::kNetwork, "connecting to studio:443: refused"));
  client_->script.push_back(HttpReply{500, "Internal Server Error"});
  client_->script.push_back(HttpReply{200, "<html>not json</html>"});
  client_->script.push_back(HttpReply{200, R"({"success":"yes"})"});
  loop_->start();
  run_until([&] { return loop_->consecutive_failures() == 4; });
  EXPECT_EQ(loop_->consecutive_failures(), 4);
  EXPECT_FALSE(loop_->last_error().empty());
  EXPECT_TRUE(answers_.empty()) << "a failed heartbeat has no answer to hand over";
  run_until([&] { return !answers_.empty(); });
  loop_->stop();
  EXPECT_EQ(loop_->consecutive_failures(), 0);
  EXPECT_EQ(loop_->last_error(), "");
  EXPECT_FALSE(answers_.empty());
  EXPECT_EQ(log_lines_with("heartbeat failed: connecting to studio:443: refused"), 1);
  EXPECT_EQ(log_lines_with("[warning]"), 1) << "one warning for the whole outage";
  EXPECT_EQ(log_lines_with("HTTP 500"), 1) << "later failures at debug level";
  EXPECT_EQ(log_lines_with("the server answers again, after 4 failed attempts"), 1);
}

TEST_F(HeartbeatLoopTest, StopCancelsAndNoCallbackRunsAfterIt) {
  loop_->start();
  run_until([&] { return !answers_.empty(); });
  loop_->stop();
  size_t sent = client_->bodies.size();
  size_t answered = answers_.size();
  io_.run_for(50ms);
  EXPECT_EQ(client_->bodies.size(), sent);
  EXPECT_EQ(answers_.size(), answered);
  EXPECT_EQ(client_->cancels, 1);
}

TEST_F(HeartbeatLoopTest, AnAnswerOfTheRunBeforeARestartIsIgnored) {
  client_->script.push_back(HttpReply{200, R"({"success":true,"message":"stale",
      "command_id":"6f1c9a5e-8d43-4b6a-9a1e-2f3d4c5b6a79",
      "profiling_command":{"command_type":"stop","combined_config":{}}})"});
  loop_->start();
  loop_->start();  // does nothing: one heartbeat in flight, not two
  io_.poll_one();  // the timer fires and the heartbeat goes out; its answer is now queued
  ASSERT_EQ(client_->bodies.size(), 1u);
  loop_->stop();
  loop_->start();
  run_until([&] { return !answers_.empty(); });
  loop_->stop();
  ASSERT_FALSE(answers_.empty());
  // The stale heartbeat and the new run's first, and more where the 5 ms interval came round
  // before stop() on a loaded host.
  EXPECT_GE(client_->bodies.size(), 2u);
  for (const auto& answer : answers_) EXPECT_FALSE(answer.command_id.has_value());
}

}  // namespace
}  // namespace dormant::heartbeat
