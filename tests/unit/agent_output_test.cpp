// The upload spool, the upload body and its size limit, and the local output (-o).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/local_output.h"
#include "agent/profile_spool.h"
#include "agent/upload_body.h"
#include "common/gzip.h"
#include "module/stack_snapshot.h"
#include "profile/collapsed.h"
#include "wire/protocol.h"

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

wire::CompressedUpload compressed(std::string end_time, std::string head) {
  return {std::move(end_time), std::move(head)};
}

TEST_F(ProfileSpoolTest, OldestFirstAndSurvivesARestart) {
  {
    auto spool = ProfileSpool::open(directory_, 1 << 20);
    ASSERT_TRUE(spool.ok());
    ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:00", "first")).ok());
    ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:01:00", "second")).ok());
    EXPECT_EQ((*spool)->files(), 2u);
  }
  auto spool = ProfileSpool::open(directory_, 1 << 20);
  ASSERT_TRUE(spool.ok());
  EXPECT_EQ((*spool)->files(), 2u);
  EXPECT_EQ((*spool)->bytes(), 2 * 20u + 11u) << "each file: the end time, a newline, the body";
  auto oldest = (*spool)->oldest_upload();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->upload, compressed("2026-11-25T10:00:00", "first"));
  (*spool)->remove_upload(oldest->key);
  EXPECT_EQ((*spool)->oldest_upload()->upload, compressed("2026-11-25T10:01:00", "second"));
}

// A profile spooled while the wall clock was an hour ahead (by an earlier run, or before the clock
// was set back): a new profile still goes after it, not before.
TEST_F(ProfileSpoolTest, AClockSetBackDoesNotPutANewProfileBeforeTheWaitingOnes) {
  auto ahead = std::chrono::duration_cast<std::chrono::milliseconds>(
                   (std::chrono::system_clock::now() + 1h).time_since_epoch())
                   .count();
  fs::create_directories(directory_);
  char name[64];
  std::snprintf(name, sizeof(name), "%015lld-000007.upload", static_cast<long long>(ahead));
  std::ofstream(directory_ / name) << "2026-11-25T11:00:00\nahead";
  auto spool = ProfileSpool::open(directory_, 1 << 20);
  ASSERT_TRUE(spool.ok());
  ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:05", "after")).ok());
  ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:06", "later still")).ok());
  for (const char* expected : {"ahead", "after", "later still"}) {
    auto oldest = (*spool)->oldest_upload();
    ASSERT_TRUE(oldest.has_value());
    EXPECT_EQ(oldest->upload.gzip_head, expected);
    (*spool)->remove_upload(oldest->key);
  }
}

// The spool directory gone and a file in its place (what root sees of a full or read-only file
// system: writes fail): profiles are held in memory, the oldest dropped past their bound, still
// given out oldest first; once the directory is back they are written out, in order.
TEST_F(ProfileSpoolTest, ProfilesThatCannotBeWrittenAreHeldInMemoryWithinABound) {
  auto spool = ProfileSpool::open(directory_, 1 << 20, /*max_held_bytes=*/60);
  ASSERT_TRUE(spool.ok());
  ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:00", "on disk")).ok());
  fs::rename(directory_, directory_.string() + ".away");
  std::ofstream(directory_) << "not a directory";
  for (const char* body : {"held 1", "held 2", "held 3", "held 4"}) {
    ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:01", body)).ok());
  }
  EXPECT_NE((*spool)->write_error(), "");
  EXPECT_EQ((*spool)->held_files(), 2u) << "26 bytes each, 60 at most";
  EXPECT_EQ((*spool)->held_bytes(), 52u);
  auto oldest = (*spool)->oldest_upload();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->upload.gzip_head, "held 3") << "the file on disk is out of reach";

  fs::remove(directory_);
  fs::rename(directory_.string() + ".away", directory_);
  ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:02", "written")).ok());
  EXPECT_EQ((*spool)->write_error(), "");
  EXPECT_EQ((*spool)->held_files(), 0u);
  EXPECT_EQ((*spool)->files(), 4u);
  for (const char* expected : {"on disk", "held 3", "held 4", "written"}) {
    oldest = (*spool)->oldest_upload();
    ASSERT_TRUE(oldest.has_value());
    EXPECT_EQ(oldest->upload.gzip_head, expected);
    (*spool)->remove_upload(oldest->key);
  }
  EXPECT_EQ((*spool)->files(), 0u);
}

TEST_F(ProfileSpoolTest, WhenFullTheOldestAreDropped) {
  auto spool = ProfileSpool::open(directory_, 40);
  ASSERT_TRUE(spool.ok());
  for (const char* body : {"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"}) {
    ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:00:00", body)).ok());
  }
  EXPECT_EQ((*spool)->files(), 1u);
  EXPECT_LE((*spool)->bytes(), 40u);
  EXPECT_EQ((*spool)->oldest_upload()->upload.gzip_head, "cccccccccc");
  EXPECT_FALSE((*spool)->add(compressed("t", std::string(40, 'x'))).ok())
      << "larger than the whole spool";
}

TEST_F(ProfileSpoolTest, AFileWithoutItsEndTimeLineIsDroppedAndTheNextGiven) {
  auto spool = ProfileSpool::open(directory_, 1 << 20);
  ASSERT_TRUE(spool.ok());
  ASSERT_TRUE((*spool)->add(compressed("2026-11-25T10:01:00", "good")).ok());
  std::ofstream(directory_ / "000000000000001-000000.upload") << std::string(100, 'x');
  auto oldest = (*spool)->oldest_upload();
  ASSERT_TRUE(oldest.has_value());
  EXPECT_EQ(oldest->upload.gzip_head, "good");
  EXPECT_EQ((*spool)->files(), 1u);
  EXPECT_FALSE((*spool)->add(compressed("two\nlines", "x")).ok());
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

module::StackSnapshot snapshot_of(const profile::StackTable& stacks) {
  return module::StackSnapshot(stacks, {{"metadata", nlohmann::json::object()}});
}

module::SnapshotTimes times_at(std::chrono::system_clock::time_point end, double cpu_avg = 0,
                               double mem_avg = 0) {
  return {end, cpu_avg, mem_avg};
}

wire::ProfileUpload read_body(const UploadBody& body, std::optional<int64_t> gpid = 7) {
  auto sent = wire::body_with_gpid(body.upload, gpid);
  EXPECT_TRUE(sent.ok());
  auto text = gzip_decompress_at_most(*sent, 256 << 20);
  EXPECT_TRUE(text.ok());
  auto upload = wire::parse_profile_upload(nlohmann::json::parse(*text));
  EXPECT_TRUE(upload.ok()) << upload.error().message();
  return *upload;
}

TEST(UploadBody, AProfileThatFitsGoesWhole) {
  auto stacks = many_stacks(100);
  auto now = std::chrono::system_clock::now();
  auto body = make_upload_body(snapshot_of(stacks), "web-01", now - 60s, times_at(now, 12.5, 40));
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->dropped_stacks, 0u);
  auto upload = read_body(*body);
  EXPECT_EQ(upload.hostname, "web-01");
  EXPECT_EQ(upload.cpu_avg, 12.5);
  EXPECT_EQ(upload.gpid, 7) << "the gpid comes with the send";
  EXPECT_EQ(read_body(*body, std::nullopt).gpid, std::nullopt) << "\"\" before the first answer";
  EXPECT_EQ(body->upload.end_time, upload.end_time);
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
  auto body = make_upload_body(snapshot_of(stacks), "web-01", now - 60s, times_at(now));
  ASSERT_TRUE(body.ok()) << body.error().message();
  auto upload = read_body(*body);
  EXPECT_NE(upload.profile.find("worker-\xef\xbf\xbd"), std::string::npos) << upload.profile;
  EXPECT_NE(upload.profile.find("caf\xef\xbf\xbd 3"), std::string::npos) << upload.profile;
}

TEST(UploadBody, ATooLargeProfileLosesItsLightestStacksAndSaysSo) {
  auto stacks = many_stacks(20000);
  auto now = std::chrono::system_clock::now();
  constexpr size_t kLimit = 64 << 10;
  auto body = make_upload_body(snapshot_of(stacks), "web-01", now - 60s, times_at(now), kLimit);
  ASSERT_TRUE(body.ok()) << body.error().message();
  EXPECT_LE(wire::body_with_gpid(body->upload, INT64_MAX)->size(), kLimit);
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

// Issue 22, agent 6: local profiles are root's alone, in a folder the agent makes 0700.
TEST(LocalOutput, ProfilesAre0600InAFolderTheAgentMakes0700) {
  fs::path directory = fs::temp_directory_path() / ("dormant-out-" + std::to_string(::getpid()));
  fs::remove_all(directory);
  LocalOutput output(directory / "profiles", /*rotating=*/false, LocalFormats{},
                     "/nonexistent/dormant-pprof");
  auto now = std::chrono::system_clock::now();
  auto written = output.write("# {}\n0;;app;main 1\n", "<svg/>", now - 60s, now);
  ASSERT_TRUE(written.ok()) << written.error().message();
  ASSERT_EQ(written->files.size(), 2u);
  auto mode = [](const fs::path& path) { return fs::status(path).permissions() & fs::perms::all; };
  EXPECT_EQ(mode(directory / "profiles"), fs::perms::owner_all);
  for (const auto& file : written->files) {
    EXPECT_EQ(mode(file), fs::perms::owner_read | fs::perms::owner_write) << file;
  }
  fs::remove_all(directory);
}

}  // namespace
}  // namespace dormant::agent
