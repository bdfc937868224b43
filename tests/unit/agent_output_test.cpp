// The upload spool, the upload body and its size limit, and the teardown of profilers.
#include <atomic>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/profile_spool.h"
#include "agent/snapshot_output.h"
#include "agent/teardown.h"
#include "common/gzip.h"
#include "heartbeat/protocol.h"
#include "profile/collapsed.h"

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ProfileSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("dormant-spool-" + std::to_string(::getpid()));
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

TEST_F(ProfileSpoolTest, OldestFirstAndSurvivesARestart) {
  {
    auto spool = ProfileSpool::open(directory_, 1 << 20);
    ASSERT_TRUE(spool.ok());
    ASSERT_TRUE((*spool)->add("first").ok());
    ASSERT_TRUE((*spool)->add("second").ok());
    EXPECT_EQ((*spool)->files(), 2u);
  }
  auto spool = ProfileSpool::open(directory_, 1 << 20);
  ASSERT_TRUE(spool.ok());
  EXPECT_EQ((*spool)->files(), 2u);
  EXPECT_EQ((*spool)->bytes(), 11u);
  auto oldest = (*spool)->oldest();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->gzip_body, "first");
  (*spool)->remove(oldest->path);
  EXPECT_EQ((*spool)->oldest()->gzip_body, "second");
}

TEST_F(ProfileSpoolTest, WhenFullTheOldestAreDropped) {
  auto spool = ProfileSpool::open(directory_, 25);
  ASSERT_TRUE(spool.ok());
  for (const char* body : {"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"}) {
    ASSERT_TRUE((*spool)->add(body).ok());
  }
  EXPECT_EQ((*spool)->files(), 2u);
  EXPECT_LE((*spool)->bytes(), 25u);
  EXPECT_EQ((*spool)->oldest()->gzip_body, "bbbbbbbbbb");
  EXPECT_FALSE((*spool)->add(std::string(26, 'x')).ok()) << "larger than the whole spool";
}

profile::StackTable many_stacks(int count) {
  profile::StackTable stacks;
  for (int i = 0; i < count; ++i) {
    std::string leaf = "function_" + std::to_string(i * 7919) + "_" + std::to_string(i);
    std::string_view frames[] = {"main", "worker", leaf};
    stacks.add("", "app", frames, static_cast<uint64_t>(i + 1));
  }
  return stacks;
}

heartbeat::ProfileUpload read_body(const UploadBody& body) {
  auto text = gzip_decompress_at_most(body.gzip_json, 256 << 20);
  EXPECT_TRUE(text.ok());
  auto upload = heartbeat::parse_profile_upload(nlohmann::json::parse(*text));
  EXPECT_TRUE(upload.ok()) << upload.error().message();
  return *upload;
}

TEST(UploadBody, AProfileThatFitsGoesWhole) {
  auto stacks = many_stacks(100);
  auto now = std::chrono::system_clock::now();
  auto body = make_upload_body(stacks, {{"metadata", {}}}, "web-01", now - 60s, now, 12.5, 40);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->dropped_stacks, 0u);
  auto upload = read_body(*body);
  EXPECT_EQ(upload.hostname, "web-01");
  EXPECT_EQ(upload.cpu_avg, 12.5);
  auto profile = profile::read_collapsed(upload.profile);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->stacks.total_samples(), stacks.total_samples());
}

// The kernel cuts comm at 15 bytes, in the middle of a UTF-8 character if need be, and perf
// prints it as it is: the upload must still be made, with U+FFFD in its place.
TEST(UploadBody, BytesThatAreNotUtf8AreReplacedNotThrown) {
  profile::StackTable stacks;
  std::string_view frames[] = {"main", "caf\xc3"};
  stacks.add("", "worker-\xe2\x82", frames, 3);
  auto now = std::chrono::system_clock::now();
  auto body = make_upload_body(stacks, {{"metadata", {}}}, "web-01", now - 60s, now, 0, 0);
  ASSERT_TRUE(body.ok()) << body.error().message();
  auto upload = read_body(*body);
  EXPECT_NE(upload.profile.find("worker-\xef\xbf\xbd"), std::string::npos) << upload.profile;
  EXPECT_NE(upload.profile.find("caf\xef\xbf\xbd 3"), std::string::npos) << upload.profile;
}

TEST(UploadBody, ATooLargeProfileLosesItsLightestStacksAndSaysSo) {
  auto stacks = many_stacks(20000);
  auto now = std::chrono::system_clock::now();
  constexpr size_t kLimit = 64 << 10;
  auto body = make_upload_body(stacks, {{"metadata", {}}}, "web-01", now - 60s, now, 0, 0, kLimit);
  ASSERT_TRUE(body.ok()) << body.error().message();
  EXPECT_LE(body->gzip_json.size(), kLimit);
  EXPECT_GT(body->dropped_stacks, 0u);
  auto profile = profile::read_collapsed(read_body(*body).profile);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->header["truncated"]["dropped_stacks"], body->dropped_stacks);
  uint64_t lightest_kept = UINT64_MAX;
  profile->stacks.for_each([&](const profile::StackView& stack) {
    lightest_kept = std::min(lightest_kept, stack.count);
  });
  EXPECT_EQ(lightest_kept, body->dropped_stacks + 1) << "not the lightest were dropped";
  EXPECT_EQ(profile->stacks.distinct_stacks() + body->dropped_stacks, 20000u);
}

// Profilers whose stop() behaves as the test says.
class StopBehaviour : public profilers::Profiler {
 public:
  enum class Kind {
    kFine,
    kThrows,
    kHangsUntilAborted,  // waits on something abort() kills, as stop() waits on perf
    kStuck,              // abort() does not help: stuck in the kernel, say
  };
  StopBehaviour(std::string name, Kind kind, std::shared_ptr<std::atomic<bool>> release)
      : name_(std::move(name)), kind_(kind), release_(std::move(release)) {}
  std::string_view name() const override { return name_; }
  Result<void> start() override { return {}; }
  Result<profile::StackTable> snapshot() override { return profile::StackTable(); }
  void stop() override {
    if (kind_ == Kind::kThrows) throw std::runtime_error("perf vanished");
    while ((kind_ == Kind::kHangsUntilAborted && aborts == 0) ||
           (kind_ == Kind::kStuck && !*release_)) {
      std::this_thread::sleep_for(5ms);
    }
    stopped = true;
  }
  void abort() override { ++aborts; }
  std::atomic<bool> stopped = false;
  std::atomic<int> aborts = 0;

 private:
  std::string name_;
  Kind kind_;
  std::shared_ptr<std::atomic<bool>> release_;
};

TEST(StopProfilers, AHangingOrFailingStopNeverKeepsAnotherRunning) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  using Kind = StopBehaviour::Kind;
  std::vector<std::unique_ptr<profilers::Profiler>> profilers;
  profilers.push_back(std::make_unique<StopBehaviour>("hangs", Kind::kHangsUntilAborted, release));
  profilers.push_back(std::make_unique<StopBehaviour>("throws", Kind::kThrows, release));
  profilers.push_back(std::make_unique<StopBehaviour>("fine", Kind::kFine, release));
  auto report = stop_profilers(std::move(profilers), 200ms);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_EQ(report.problems[0],
            "hangs: stop() passed its 200 ms deadline; its processes were killed");
  EXPECT_EQ(report.problems[1], "throws: stop() failed: perf vanished");
}

TEST(StopProfilers, AStopThatAbortCannotEndIsAbandonedNotFreedUnderIt) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::unique_ptr<profilers::Profiler>> profilers;
  profilers.push_back(
      std::make_unique<StopBehaviour>("stuck", StopBehaviour::Kind::kStuck, release));
  profilers.push_back(std::make_unique<StopBehaviour>("fine", StopBehaviour::Kind::kFine, release));
  auto* stuck = static_cast<StopBehaviour*>(profilers[0].get());
  auto report = stop_profilers(std::move(profilers), 100ms);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0],
            "stuck: stop() passed its 100 ms deadline and did not return once its processes were "
            "killed; abandoned");
  EXPECT_EQ(stuck->aborts, 1);
  *release = true;  // the abandoned stop() ends; its profiler was never freed under it
  for (int i = 0; i < 200 && !stuck->stopped; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(stuck->stopped);
  std::this_thread::sleep_for(50ms);  // for its thread to return from stop()
  delete stuck;
}

}  // namespace
}  // namespace dormant::agent
