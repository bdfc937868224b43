// The failover rule of the agent's client: which outcomes move the next request to the next
// server, that a server that works is kept, and that a move is logged once, not per attempt.
#include "heartbeat/server_rotation.h"

#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace dormant::heartbeat {
namespace {

ServerUrl url(const std::string& host) { return parse_server_url("https://" + host).value(); }

Result<HttpReply> answer(unsigned status) { return HttpReply{status, "{}"}; }

Result<HttpReply> failure(ErrorKind kind) { return Error(kind, "connecting to a:443: refused"); }

// The default logger writes to a string for the test, at every level.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l %v");
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  int count(const std::string& needle) const {
    std::string text = out_.str();
    int found = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++found;
    }
    return found;
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(FailoverReason, ConnectionFailuresAndOverloadedGatewaysMoveOn) {
  for (unsigned status : {502u, 503u, 504u}) {
    EXPECT_EQ(failover_reason(answer(status)), "HTTP " + std::to_string(status));
  }
  for (ErrorKind kind : {ErrorKind::kNetwork, ErrorKind::kTls, ErrorKind::kTimeout}) {
    EXPECT_EQ(failover_reason(failure(kind)), "connecting to a:443: refused") << to_string(kind);
  }
}

TEST(FailoverReason, AnswersFromAServerThatIsThereAndCancelsDoNot) {
  for (unsigned status : {200u, 204u, 400u, 401u, 403u, 404u, 429u, 500u, 501u}) {
    EXPECT_FALSE(failover_reason(answer(status))) << status;
  }
  for (ErrorKind kind : {ErrorKind::kCancelled, ErrorKind::kInvalidArgument, ErrorKind::kParse}) {
    EXPECT_FALSE(failover_reason(failure(kind))) << to_string(kind);
  }
}

TEST(ServerRotation, MovesOnAFailureStaysOnAServerThatWorksAndGoesRoundTheList) {
  CapturedLog log;
  ServerRotation servers({url("a"), url("b"), url("c")});
  EXPECT_EQ(servers.current().host, "a");
  EXPECT_TRUE(servers.after(failure(ErrorKind::kNetwork)));
  EXPECT_EQ(servers.current().host, "b");
  for (unsigned status : {200u, 500u, 404u, 200u}) {
    EXPECT_FALSE(servers.after(answer(status))) << status;
    EXPECT_EQ(servers.current().host, "b") << "left a server that answered " << status;
  }
  EXPECT_FALSE(servers.after(failure(ErrorKind::kCancelled)));
  EXPECT_EQ(servers.current().host, "b");
  EXPECT_TRUE(servers.after(answer(503)));
  EXPECT_EQ(servers.current().host, "c");
  EXPECT_TRUE(servers.after(failure(ErrorKind::kTimeout)));
  EXPECT_EQ(servers.current().host, "a") << "round the list";
  EXPECT_EQ(log.count("control server https://b:443 failed (HTTP 503); next requests go to "
                      "https://c:443"),
            1)
      << log.text();
}

TEST(ServerRotation, OneServerIsNeverLeftAndNothingIsLogged) {
  CapturedLog log;
  ServerRotation servers({url("only")});
  EXPECT_FALSE(servers.after(failure(ErrorKind::kNetwork)));
  EXPECT_FALSE(servers.after(answer(503)));
  EXPECT_EQ(servers.current().host, "only");
  EXPECT_EQ(log.text(), "");
}

// Each move is one line, as a warning while the servers fail for the first time in a row; once
// every one of them has, the outage is the callers' to report and the moves go to debug.
TEST(ServerRotation, AnOutageOfEveryServerWarnsOncePerServer) {
  CapturedLog log;
  ServerRotation servers({url("a"), url("b")});
  for (int attempt = 0; attempt < 10; ++attempt) {
    EXPECT_TRUE(servers.after(failure(ErrorKind::kNetwork)));
  }
  EXPECT_EQ(log.count("warning control server"), 2) << log.text();
  EXPECT_EQ(log.count("debug control server"), 8) << log.text();
  EXPECT_FALSE(servers.after(answer(200)));
  EXPECT_TRUE(servers.after(answer(503)));
  EXPECT_EQ(log.count("warning control server"), 3) << "a new run of failures warns again";
}

}  // namespace
}  // namespace dormant::heartbeat
