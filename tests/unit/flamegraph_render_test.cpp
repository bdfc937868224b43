// Issue 22, server 1: flamegraphs are drawn on threads of their own, a bounded number at once
// (503 past them), and a profile's SVG is kept for the next request within a size in bytes.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include "common/iso_time.h"
#include "profile/collapsed.h"
#include "server/api/api.h"
#include "server/api/job_pool.h"
#include "server/api/profile_merge.h"
#include "server/api/profile_rollup.h"
#include "server/api/svg_cache.h"

namespace dormant::server::api {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;

std::shared_ptr<const CachedSvg> svg_of(size_t bytes) {
  auto svg = std::make_shared<CachedSvg>();
  svg->svg.assign(bytes, 'x');
  return svg;
}

TEST(SvgCache, KeepsTheMostRecentlyUsedWithinItsBytes) {
  SvgCache cache(1000);
  cache.put("a", svg_of(399));
  cache.put("b", svg_of(399));
  ASSERT_NE(cache.find("a"), nullptr);  // now b is the least recently used
  cache.put("c", svg_of(399));
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_NE(cache.find("a"), nullptr);
  EXPECT_NE(cache.find("c"), nullptr);
  EXPECT_EQ(cache.bytes(), 800u);
  cache.put("too large", svg_of(1000));
  EXPECT_EQ(cache.find("too large"), nullptr);
  EXPECT_EQ(cache.bytes(), 800u);
}

TEST(JobPool, AJobPastTheThreadsAndTheQueueIsRefusedUntilOneEnds) {
  JobPool pool("test", 1, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_started;
  ASSERT_TRUE(pool.try_post([&] {
    first_started.set_value();
    released.wait();
  }));
  first_started.get_future().wait();
  std::promise<void> second_ran;
  ASSERT_TRUE(pool.try_post([&] { second_ran.set_value(); }));  // waits in the queue
  EXPECT_FALSE(pool.try_post([] {}));
  release.set_value();
  second_ran.get_future().wait();
  // The slots come back as the jobs end.
  std::promise<void> third_ran;
  for (int tries = 0; !pool.try_post([&] { third_ran.set_value(); }); ++tries) {
    ASSERT_LT(tries, 10000);
    std::this_thread::yield();
  }
  third_ran.get_future().wait();
}

// The connection's side: the answer, who gave it, and (when held) a reply that blocks its
// thread until released, as a render that takes long would.
class RecordingResponder final : public http::Responder {
 public:
  explicit RecordingResponder(boost::asio::io_context& io, bool hold = false)
      : executor_(io.get_executor()), hold_(hold) {}

  void reply(http::Response response) override {
    std::unique_lock lock(mutex_);
    response_ = std::move(response);
    thread_ = std::this_thread::get_id();
    changed_.notify_all();
    changed_.wait(lock, [&] { return !hold_; });
  }
  boost::asio::any_io_executor executor() const override { return executor_; }
  void on_reclaim(std::function<void()>) override {}  // renders are never held for later

  http::Response wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return response_.has_value(); });
    return *response_;
  }
  std::thread::id thread() {
    wait();
    std::lock_guard lock(mutex_);
    return thread_;
  }
  void release() {
    std::lock_guard lock(mutex_);
    hold_ = false;
    changed_.notify_all();
  }

 private:
  boost::asio::any_io_executor executor_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<http::Response> response_;
  std::thread::id thread_;
  bool hold_;
};

class FlamegraphRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dormant-render-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    auto store = storage::Store::open(dir_ / "data");
    ASSERT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(*store);
    ApiOptions options;
    options.render_threads = 1;
    options.render_queue = 0;
    api_ = std::make_unique<Api>(*store_, Tokens::of(std::vector<std::string_view>{"t0k3n"}),
                                 metrics_, options);
    auto gpid = store_->store_profile(
        rolled_up("web-01", "# {}\n0;;nginx;main;serve;write 3\n0;;nginx;main;poll 1\n"));
    ASSERT_TRUE(gpid.ok()) << gpid.error().message();
    gpid_ = *gpid;
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // Sends a request through the server's handler, as a connection would.
  std::shared_ptr<RecordingResponder> get(const std::string& target, bool hold = false,
                                          const std::string& token = "t0k3n") {
    http::Request request(bhttp::verb::get, target, 11);
    request.set(bhttp::field::authorization, "Bearer " + token);
    auto responder = std::make_shared<RecordingResponder>(io_, hold);
    api_->handle(request, http::Client{"127.0.0.1:1", {}, "127.0.0.1", nullptr}, responder);
    return responder;
  }
  // The one render thread counts as busy until its job has returned, a moment after it answered:
  // a render asked for right after another may find it so, and is asked again then.
  http::Response get_once_free(const std::string& target) {
    for (int tries = 0;; ++tries) {
      http::Response response = get(target)->wait();
      if (response.result_int() != 503 || tries == 1000) return response;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::string flamegraph() { return "/api/profiles/" + std::to_string(gpid_) + "/flamegraph"; }

  static constexpr storage::TimePoint kStart{std::chrono::seconds(1763805600)};
  // A profile of "web" from kStart, with the rollup its upload gives.
  static storage::ProfileUpload rolled_up(const std::string& hostname, const std::string& text) {
    storage::ProfileUpload upload;
    upload.service_name = "web";
    upload.hostname = hostname;
    upload.start_time = kStart;
    upload.end_time = kStart + std::chrono::seconds(60);
    upload.collapsed = text;
    auto parsed = profile::read_collapsed(text);
    EXPECT_TRUE(parsed.ok()) << parsed.error().message();
    if (parsed.ok()) upload.rollup = rollup_of(*parsed, hostname, "");
    return upload;
  }

  fs::path dir_;
  boost::asio::io_context io_;
  ServerMetrics metrics_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Api> api_;
  int64_t gpid_ = 0;
};

TEST_F(FlamegraphRenderTest, AFlamegraphIsDrawnOffTheThreadThatHandlesTheConnection) {
  auto drawn = get(flamegraph());
  http::Response response = drawn->wait();
  EXPECT_EQ(response.result_int(), 200) << response.body();
  EXPECT_NE(response.body().find("<title>serve\n3 samples"), std::string::npos);
  EXPECT_NE(drawn->thread(), std::this_thread::get_id());
  // Everything else is answered on the handler's thread, as before.
  auto listed = get("/api/profiles");
  EXPECT_EQ(listed->wait().result_int(), 200);
  EXPECT_EQ(listed->thread(), std::this_thread::get_id());
}

TEST_F(FlamegraphRenderTest, PastTheRenderThreadsAndQueueTheAnswerIs503WithRetryAfter) {
  auto busy_thread = get(flamegraph(), /*hold=*/true);  // holds the one render thread
  busy_thread->wait();
  http::Response refused = get(flamegraph())->wait();
  EXPECT_EQ(refused.result_int(), 503) << refused.body();
  EXPECT_EQ(refused[bhttp::field::retry_after], "5");
  EXPECT_EQ(metrics_.requests("/api/profiles/{}/flamegraph", 503), 1u);
  // A request without a valid token never waits for a render thread.
  EXPECT_EQ(get(flamegraph(), false, "wrong")->wait().result_int(), 401);
  busy_thread->release();
}

// Issue 40: a merge ran on the one render thread, so that a single profile's pprof waited for it
// (13.3 s). Merges have threads of their own: one held, a profile is still drawn; a second merge
// waits for the thread and a third is refused at once.
TEST_F(FlamegraphRenderTest, AMergeNeverHoldsTheThreadThatDrawsAProfile) {
  const std::string merge =
      "/api/flamegraph?service=web&format=collapsed&since=" + iso_utc(kStart) +
      "&until=" + iso_utc(kStart + std::chrono::hours(1));
  auto merging = get(merge, /*hold=*/true);
  EXPECT_EQ(merging->wait().result_int(), 200);
  http::Response drawn = get(flamegraph())->wait();
  EXPECT_EQ(drawn.result_int(), 200) << drawn.body();
  auto waiting = get(merge);
  http::Response third = get(merge)->wait();
  EXPECT_EQ(third.result_int(), 503);
  EXPECT_NE(third.body().find("merged flamegraphs"), std::string::npos) << third.body();
  merging->release();
  EXPECT_EQ(waiting->wait().result_int(), 200);
}

TEST_F(FlamegraphRenderTest, AProfilesSvgIsDrawnOnceAndServedWithANonceOfItsOwn) {
  http::Response first = get(flamegraph())->wait();
  http::Response second = get_once_free(flamegraph());
  ASSERT_EQ(first.result_int(), 200);
  ASSERT_EQ(second.result_int(), 200);
  EXPECT_EQ(first.find("X-Dormant-Cached"), first.end());
  EXPECT_EQ(second["X-Dormant-Cached"], "1");
  auto nonce_of = [](const http::Response& response) {
    std::string policy(response["Content-Security-Policy"]);
    size_t at = policy.find("'nonce-") + 7;
    return policy.substr(at, policy.find('\'', at) - at);
  };
  const std::string first_nonce = nonce_of(first), second_nonce = nonce_of(second);
  EXPECT_NE(first_nonce, second_nonce);
  for (const auto* response : {&first, &second}) {
    const std::string nonce = nonce_of(*response);
    const std::string& body = response->body();
    EXPECT_NE(body.find("<style nonce=\"" + nonce + "\">"), std::string::npos);
    EXPECT_NE(body.find("<script type=\"text/ecmascript\" nonce=\"" + nonce + "\">"),
              std::string::npos);
  }
  std::string unnonced = second.body();
  for (size_t at = unnonced.find(second_nonce); at != std::string::npos;
       at = unnonced.find(second_nonce)) {
    unnonced.replace(at, second_nonce.size(), first_nonce);
  }
  EXPECT_EQ(unnonced, first.body());
  // Another rendering of the same profile is another entry.
  http::Response with_idle = get_once_free(flamegraph() + "?idle=1");
  EXPECT_EQ(with_idle.find("X-Dormant-Cached"), with_idle.end());
}

// Issue 40: a merge read every profile of its selection, and went on after its client had left.
// Issue 42: it reads the service's rollups: with every profile's body gone, the merge is the same.
TEST_F(FlamegraphRenderTest, AMergeReadsRollupsNotTheProfilesBodies) {
  for (int i = 0; i < 9; ++i) {
    auto stored = store_->store_profile(
        rolled_up("web-0" + std::to_string(i + 2), "# {}\n0;;nginx;main;serve;write 3\n"));
    ASSERT_TRUE(stored.ok()) << stored.error().message();
  }
  for (const auto& entry : fs::directory_iterator(dir_ / "data" / "profiles")) {
    fs::remove(entry.path());
  }
  MergeSelection selection;
  selection.service = "web";
  selection.since = kStart;
  selection.until = kStart + std::chrono::minutes(1);
  auto merged = merge_rollups(*store_, selection);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->profiles, 10);  // and the fixture's
  EXPECT_EQ(merged->hosts.size(), 10u);
  EXPECT_EQ(merged->stacks.total_samples(), 9u * 3 + 4);
}

// Profiles of distinct stacks 2,048 frames deep, merged: a million such stacks (the stack limit)
// would hold 8 GB. The merge keeps stacks within its bytes and counts the rest as one.
TEST_F(FlamegraphRenderTest, ManyDeepStacksMergeWithinTheMemoryBound) {
  constexpr size_t kBudget = 4 << 20;
  uint64_t samples = 0;
  std::string tail;
  for (size_t i = 1; i < profile::kMaxStackDepth; ++i) tail += ";f";
  for (int profile = 0; profile < 4; ++profile) {
    std::string text = "# {}\n";
    for (int stack = 0; stack < 500; ++stack) {
      text += "0;;app;p" + std::to_string(profile) + "s" + std::to_string(stack) + tail + " 2\n";
      samples += 2;
    }
    ASSERT_TRUE(store_->store_profile(rolled_up("batch-01", text)).ok());
  }
  MergeSelection selection;
  selection.service = "web";
  selection.since = kStart;
  selection.until = kStart + std::chrono::minutes(1);
  selection.filter = storage::LabelFilter{false, {{storage::Label::kHostName, true, "batch-01"}}};
  selection.max_bytes = kBudget;
  auto merged = merge_rollups(*store_, selection);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  std::printf("merged: %zu stacks in %zu bytes, %lu samples beyond the limit\n",
              merged->stacks.distinct_stacks(), merged->stacks.bytes(),
              static_cast<unsigned long>(merged->samples_beyond_limit));
  // Its vectors grow by doubling: up to twice what they hold when the budget is reached.
  EXPECT_LE(merged->stacks.bytes(), 2 * kBudget + (1 << 20));
  EXPECT_GT(merged->samples_beyond_limit, 0u);
  EXPECT_EQ(merged->stacks.total_samples(), samples) << "no sample lost";
}

}  // namespace
}  // namespace dormant::server::api
