// Attack: the control server (or a proxy before it) answers every delivery with 401 for an hour,
// as a rotated token or a misconfigured path does, then takes them again. Bound: every profile in
// the spool and every completion the journal owes is delivered, none deleted, and the agent's
// health says the deliveries are being retried meanwhile. Real server, client, spool and journal;
// only the backoffs run on fake time.
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fake_backoff_time.h"

#include "agent/command_journal.h"
#include "agent/profile_spool.h"
#include "common/uuid.h"
#include "heartbeat/delivery_senders.h"
#include "heartbeat/https_client.h"
#include "server/http/http_server.h"

namespace dormant::heartbeat {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

constexpr int kProfiles = 20;
constexpr int kCompletions = 5;

// Refuses every request until the fake clock passes `refuse_for`; then records what it takes.
class RefusingServer {
 public:
  RefusingServer(const FakeBackoffTime& time, std::chrono::milliseconds refuse_for,
                 unsigned refusal)
      : time_(time), refuse_for_(refuse_for), refusal_(refusal) {
    server::http::HttpServerOptions options;
    auto started = server::http::HttpServer::start(
        options, [this](const server::http::Request& request, const std::string&) {
          return answer(request);
        });
    EXPECT_TRUE(started.ok()) << started.error().message();
    if (started.ok()) http_ = std::move(*started);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(http_->port()); }

  std::set<std::string> completions() const {
    std::lock_guard lock(mutex_);
    return completions_;
  }
  std::set<std::string> profiles() const {
    std::lock_guard lock(mutex_);
    return profiles_;
  }
  int refused() const {
    std::lock_guard lock(mutex_);
    return refused_;
  }

 private:
  server::http::Response answer(const server::http::Request& request) {
    std::lock_guard lock(mutex_);
    if (time_.now() < refuse_for_) {
      ++refused_;
      return server::http::json_response(static_cast<bhttp::status>(refusal_),
                                         R"({"message": "a valid API token is required"})");
    }
    std::string target(request.target());
    if (target.starts_with("/api/metrics/command_completion")) {
      completions_.insert(nlohmann::json::parse(request.body())["command_id"].get<std::string>());
      return server::http::json_response(bhttp::status::ok, R"({"success": true})");
    }
    size_t from = target.find("&timestamp=") + 11;
    std::string timestamp = target.substr(from, target.find('&', from) - from);
    for (size_t colon; (colon = timestamp.find("%3A")) != std::string::npos;) {
      timestamp.replace(colon, 3, ":");
    }
    profiles_.insert(timestamp);
    return server::http::json_response(bhttp::status::ok, R"({"gpid": 7})");
  }

  const FakeBackoffTime& time_;
  const std::chrono::milliseconds refuse_for_;
  const unsigned refusal_;
  mutable std::mutex mutex_;
  std::set<std::string> completions_;
  std::set<std::string> profiles_;
  int refused_ = 0;
  std::unique_ptr<server::http::HttpServer> http_;
};

const UploadIdentity kIdentity{"token", "web", "web-01", "test"};

struct Senders {
  std::shared_ptr<RetryingSender> completions;
  std::shared_ptr<RetryingSender> uploads;
};

// The agent's two senders as its daemon makes them, each with its own connection to `server`,
// started; backoffs on `time`. Empty, with a failure added, when a client cannot be made.
Senders start_senders(boost::asio::io_context& io, FakeBackoffTime& time,
                      const RefusingServer& server, const RetryPolicy& policy,
                      CompletionQueue& journal, UploadQueue& spool) {
  auto url = parse_server_url(server.url());
  if (!url.ok()) {
    ADD_FAILURE() << url.error().message();
    return {};
  }
  auto control = HttpsClient::make(io, *url, nullptr, {});
  auto uploads_client = HttpsClient::make(io, *url, nullptr, {});
  if (!control.ok() || !uploads_client.ok()) {
    ADD_FAILURE() << "no client for " << server.url();
    return {};
  }
  Senders senders{
      make_completion_sender(io, *control, RetryTimer(policy), journal, time.timer()),
      make_upload_sender(io, *uploads_client, RetryTimer(policy), spool, kIdentity, time.timer())};
  senders.completions->kick();
  senders.uploads->kick();
  return senders;
}

class UnauthorizedServerTest : public ::testing::TestWithParam<unsigned> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-unauthorized-" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

TEST_P(UnauthorizedServerTest, AnHourOfRefusalsLosesNothing) {
  boost::asio::io_context io;
  FakeBackoffTime time(io);
  RefusingServer server(time, 1h, GetParam());

  auto journal = agent::CommandJournal::open(root_ / "journal.json");
  std::set<std::string> owed;
  for (int i = 0; i < kCompletions; ++i) {
    wire::CommandCompletion completion;
    completion.command_id = random_uuid();
    completion.hostname = "web-01";
    journal.record_completion(completion);
    owed.insert(completion.command_id);
  }
  auto spool = agent::ProfileSpool::open(root_ / "spool", 1 << 20);
  ASSERT_TRUE(spool.ok());
  std::set<std::string> spooled;
  for (int i = 0; i < kProfiles; ++i) {
    wire::ProfileUpload upload;
    upload.start_time = "2026-11-26T10:00:00";
    upload.end_time = "2026-11-26T10:01:" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    upload.hostname = "web-01";
    upload.profile = "# {}\napp;main 1\n";
    auto compressed = wire::compress_upload(upload);
    ASSERT_TRUE(compressed.ok());
    ASSERT_TRUE((*spool)->add(*compressed).ok());
    spooled.insert(upload.end_time);
  }

  RetryPolicy policy;  // the agent's: 30 s doubling up to 5 min
  policy.interval = 30s;
  policy.max_backoff = 300s;
  auto [completions, uploads] = start_senders(io, time, server, policy, journal, **spool);
  ASSERT_TRUE(completions && uploads);

  bool saw_retrying = false;
  auto sending = [](const RetryingSender& sender) {
    return sender.busy() && !sender.backing_off();
  };
  auto real_deadline = std::chrono::steady_clock::now() + 60s;
  while ((!journal.owed().empty() || (*spool)->files() > 0) &&
         std::chrono::steady_clock::now() < real_deadline) {
    io.restart();  // a run with nothing to do (all backing off, on fake time) stops the context
    io.run_for(1ms);
    if (time.now() < 1h && completions->backing_off() && uploads->backing_off()) {
      saw_retrying = true;
      EXPECT_EQ(journal.owed().size(), static_cast<size_t>(kCompletions));
      EXPECT_EQ((*spool)->files(), static_cast<size_t>(kProfiles));
    }
    if (!sending(*completions) && !sending(*uploads)) time.advance_to_next();
  }
  completions->stop();
  uploads->stop();

  EXPECT_GE(time.now(), 1h);
  EXPECT_TRUE(saw_retrying) << "the senders backed off while refused";
  EXPECT_GT(server.refused(), 2 * 10) << "tries went on through the hour, with backoff";
  EXPECT_LT(server.refused(), 2 * 30) << "backoff kept the tries rare";
  EXPECT_EQ(server.completions(), owed) << "every owed completion delivered";
  EXPECT_EQ(server.profiles(), spooled) << "every spooled profile delivered";
  EXPECT_TRUE(journal.owed().empty());
  EXPECT_EQ((*spool)->files(), 0u);
  EXPECT_EQ((*spool)->rejected_files(), 0u);
}

// 401 as in the finding; the others a misconfigured server or proxy answers the same way.
INSTANTIATE_TEST_SUITE_P(Refusals, UnauthorizedServerTest,
                         ::testing::Values(401u, 403u, 404u, 302u, 407u, 421u, 503u));

// What the server refuses for good (400, 413, 415, 422) is no longer owed, but not deleted
// either: profiles and completions alike wait in spool/rejected/ for a person to look at.
class RefusedForGoodTest : public UnauthorizedServerTest {};

TEST_P(RefusedForGoodTest, ProfilesAndCompletionsGoToTheRejectedFolder) {
  boost::asio::io_context io;
  FakeBackoffTime time(io);
  RefusingServer server(time, 1000h, GetParam());
  auto journal = agent::CommandJournal::open(root_ / "journal.json");
  auto spool = agent::ProfileSpool::open(root_ / "spool", 1 << 20);
  ASSERT_TRUE(spool.ok());
  journal.keep_rejected_with([&](const std::string& id, const std::string& json) {
    (*spool)->keep_rejected_completion(id, json);
  });
  wire::CommandCompletion completion;
  completion.command_id = random_uuid();
  completion.hostname = "web-01";
  completion.error_message = "perf failed";
  completion.status = wire::CompletionStatus::kFailed;
  journal.record_completion(completion);
  wire::ProfileUpload upload;
  upload.start_time = upload.end_time = "2026-11-26T10:00:00";
  upload.hostname = "web-01";
  upload.profile = "# {}\napp;main 1\n";
  ASSERT_TRUE((*spool)->add(*wire::compress_upload(upload)).ok());

  auto [completions, uploads] = start_senders(io, time, server, RetryPolicy{}, journal, **spool);
  ASSERT_TRUE(completions && uploads);
  auto real_deadline = std::chrono::steady_clock::now() + 60s;
  while ((!journal.owed().empty() || (*spool)->files() > 0) &&
         std::chrono::steady_clock::now() < real_deadline) {
    io.run_for(1ms);
    io.restart();
  }
  completions->stop();
  uploads->stop();

  EXPECT_TRUE(journal.owed().empty()) << "no longer owed";
  EXPECT_EQ((*spool)->files(), 0u);
  EXPECT_EQ(server.refused(), 2) << "each refused once, not retried";
  EXPECT_EQ((*spool)->rejected_files(), 2u);
  std::string kept_completion;
  for (const auto& entry : fs::directory_iterator(root_ / "spool" / "rejected")) {
    if (entry.path().filename().string().find("-completion-") == std::string::npos) continue;
    auto parsed = nlohmann::json::parse(std::ifstream(entry.path()));
    EXPECT_EQ(parsed["command_id"], completion.command_id);
    EXPECT_EQ(parsed["error_message"], "perf failed");
    kept_completion = entry.path().filename().string();
  }
  EXPECT_NE(kept_completion, "") << "the completion is kept aside";
}

INSTANTIATE_TEST_SUITE_P(Refusals, RefusedForGoodTest, ::testing::Values(400u, 413u, 415u, 422u));

}  // namespace
}  // namespace dormant::heartbeat
