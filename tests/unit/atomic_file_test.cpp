#include "common/atomic_file.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dormant {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dormant-atomic-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesLeavingNoTemporaryFile) {
  fs::path path = dir_ / "journal.json";
  ASSERT_TRUE(write_file_atomically(path, "first").ok());
  ASSERT_TRUE(write_file_atomically(path, "second", 0600).ok());
  EXPECT_EQ(read_file(path).value(), "second");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFileTest, FailureLeavesTheOldContent) {
  fs::path path = dir_ / "kept";
  ASSERT_TRUE(write_file_atomically(path, "old").ok());
  auto failed = write_file_atomically(dir_ / "missing-dir" / "x", "new");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message().find("No such file or directory"), std::string::npos);
  EXPECT_EQ(read_file(path).value(), "old");
}

TEST_F(AtomicFileTest, ReadingAMissingFileSaysWhich) {
  auto missing = read_file(dir_ / "absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find("absent"), std::string::npos);
}

}  // namespace
}  // namespace dormant
