// The heartbeat daemon in this process, against a real dormant-server, on a clock the test moves:
// what a shutdown delivers before exiting, where its drain ends, how often agent_health reads the
// agent's memory.
#include "agent/agent_daemon.h"

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "server_process.h"
#include "tests/support/eventually.h"
#include "tests/support/loopback_socket.h"

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::eventually;
using testing::LoopbackSocket;
using testing::ServerProcess;
constexpr auto kPatience = 30s;

// A steady clock that runs with the real one, plus whatever the test adds.
class MovableClock {
 public:
  SteadyClock::time_point now() {
    ++reads_;
    return SteadyClock::now() + std::chrono::milliseconds(ahead_ms_.load());
  }
  void advance(std::chrono::milliseconds by) { ahead_ms_ += by.count(); }
  int reads() const { return reads_.load(); }

 private:
  std::atomic<int64_t> ahead_ms_{0};
  std::atomic<int> reads_{0};
};

class AgentDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dormant-daemon-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "state");
    server_ = std::make_unique<ServerProcess>(root_);
    config_.enable_heartbeat_server = true;
    config_.tls_ca_bundle = (root_ / "certs" / "ca.pem").string();
    config_.token = testing::kToken;
    config_.service_name = "daemon";
    config_.heartbeat_interval_s = 0.05;
    config_.upload_results = true;
    config_.state_dir = (root_ / "state").string();
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->request_shutdown();
      clock_.advance(1h);  // whatever it still owes
      ran_.wait();
    }
    daemon_.reset();
    server_.reset();
    fs::remove_all(root_);
  }

  void set_server(uint16_t port) {
    config_.api_server = "https://localhost:" + std::to_string(port);
  }

  // A profile waiting in the spool, as a session leaves it.
  void spool_a_profile() {
    auto spool = ProfileSpool::open(root_ / "state" / "spool", 1 << 20);
    ASSERT_TRUE(spool.ok());
    std::string hostname = read_host_info().hostname;
    auto upload = wire::parse_profile_upload(
        testing::upload_body(hostname, testing::collapsed_profile(hostname, "0;;app;a;b 5\n")));
    ASSERT_TRUE(upload.ok()) << upload.error().message();
    auto compressed = wire::compress_upload(*upload);
    ASSERT_TRUE(compressed.ok());
    ASSERT_TRUE((*spool)->add(*compressed).ok());
  }
  size_t spooled_files() {
    auto spool = ProfileSpool::open(root_ / "state" / "spool", 1 << 20);
    return spool.ok() ? (*spool)->files() : 0;
  }

  void start_daemon() {
    auto spool = ProfileSpool::open(root_ / "state" / "spool", 1 << 20);
    ASSERT_TRUE(spool.ok());
    DaemonEnvironment environment;
    environment.drain_time = 1h;  // ends only when the test moves the clock
    environment.now = [this] { return clock_.now(); };
    environment.read_memory = [this]() -> Result<procfs::MemoryUsage> {
      ++memory_reads_;
      return procfs::MemoryUsage{};
    };
    daemon_ = std::make_unique<AgentDaemon>(config_, read_host_info(),
                                            CommandJournal::open(root_ / "state" / "journal.json"),
                                            std::move(*spool), environment);
    ran_ = std::async(std::launch::async, [this] { return daemon_->run(); });
  }
  bool has_returned() { return ran_.wait_for(0s) == std::future_status::ready; }

  fs::path root_;
  std::unique_ptr<ServerProcess> server_;
  config::AgentConfig config_;
  MovableClock clock_;
  std::atomic<int> memory_reads_{0};
  std::unique_ptr<AgentDaemon> daemon_;
  std::future<Result<int>> ran_;
};

TEST_F(AgentDaemonTest, AShutdownDeliversWhatIsOwedBeforeTheDaemonReturns) {
  ASSERT_TRUE(server_->start()) << server_->log();
  set_server(server_->port());
  spool_a_profile();
  start_daemon();
  daemon_->request_shutdown();
  // The clock does not move: only the delivery can end the drain.
  ASSERT_TRUE(eventually([&] { return has_returned(); }, kPatience)) << "the drain never ended";
  auto ran = ran_.get();
  daemon_.reset();
  ASSERT_TRUE(ran.ok()) << ran.error().message();
  EXPECT_EQ(*ran, 0);
  EXPECT_EQ(spooled_files(), 0u);
  EXPECT_EQ(server_->get("/api/profiles?service=daemon").json()["profiles"].size(), 1u);
}

TEST_F(AgentDaemonTest, WithTheServerAwayTheDrainEndsAtItsDeadlineAndKeepsWhatIsOwed) {
  LoopbackSocket away(LoopbackSocket::Mode::kRefusing);
  set_server(away.port());
  config_.tls_ca_bundle.clear();  // no server made the test CA
  config_.no_verify = true;
  spool_a_profile();
  start_daemon();
  int reads_before = clock_.reads();
  daemon_->request_shutdown();
  // The drain looks at the clock every 100 ms.
  ASSERT_TRUE(eventually([&] { return clock_.reads() >= reads_before + 3; }, kPatience))
      << "the drain never checked its deadline";
  EXPECT_FALSE(has_returned()) << "the drain ended before its deadline";
  clock_.advance(1h);
  ASSERT_TRUE(eventually([&] { return has_returned(); }, kPatience))
      << "the drain outlived its deadline";
  auto ran = ran_.get();
  daemon_.reset();
  ASSERT_TRUE(ran.ok()) << ran.error().message();
  EXPECT_EQ(spooled_files(), 1u) << "the undelivered profile is kept for the next run";
}

TEST_F(AgentDaemonTest, AgentHealthReadsTheAgentsMemoryOnceAMinute) {
  ASSERT_TRUE(server_->start()) << server_->log();
  set_server(server_->port());
  start_daemon();
  // Each heartbeat reads the clock once.
  ASSERT_TRUE(eventually([&] { return clock_.reads() >= 10; }, kPatience)) << server_->log();
  EXPECT_EQ(memory_reads_.load(), 1) << "heartbeats within a minute share one reading";
  clock_.advance(61s);
  int reads_then = clock_.reads();
  ASSERT_TRUE(eventually([&] { return clock_.reads() >= reads_then + 10; }, kPatience));
  EXPECT_EQ(memory_reads_.load(), 2) << "a minute later, one more reading";
}

// Issue 43: one http:// URL, both the heartbeats' and the uploads' server, gave four warnings.
TEST_F(AgentDaemonTest, EachPlainHttpServerIsWarnedOfOnce) {
  auto log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", log));
  LoopbackSocket closed(LoopbackSocket::Mode::kRefusing);
  std::string first = "http://127.0.0.1:" + std::to_string(closed.port());
  config_.api_server = first;
  config_.server_host = first + ",http://127.0.0.2:" + std::to_string(closed.port());
  config_.tls_ca_bundle.clear();  // no server made the test CA
  start_daemon();
  auto lines_with = [&](const std::string& text) {
    int count = 0;
    for (const std::string& line : log->last_formatted()) count += line.find(text) != line.npos;
    return count;
  };
  bool failed = eventually([&] { return lines_with("heartbeat failed") > 0; }, kPatience);
  spdlog::set_default_logger(previous);
  std::string lines;
  for (const std::string& line : log->last_formatted()) lines += line;
  ASSERT_TRUE(failed) << lines;
  EXPECT_EQ(lines_with("is plain HTTP"), 2);
  EXPECT_EQ(lines_with(first + " is plain HTTP"), 1);
}

}  // namespace
}  // namespace dormant::agent
