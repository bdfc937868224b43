#include "common/private_directory.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dormant {
namespace {

namespace fs = std::filesystem;

class PrivateDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-private-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static mode_t mode_of(const fs::path& path) {
    struct stat status {};
    ::lstat(path.c_str(), &status);
    return status.st_mode & 07777;
  }

  fs::path root_;
};

// Issue 22, agent 6: the state directory and local profiles are made 0700 by mkdir, and a
// directory someone else could change is refused rather than trusted.
TEST_F(PrivateDirectoryTest, MadeWithItsParentsAs0700WhateverTheUmask) {
  mode_t old = ::umask(0);
  auto made = make_private_directory(root_ / "a" / "b");
  ::umask(old);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(mode_of(root_ / "a"), 0700u);
  EXPECT_EQ(mode_of(root_ / "a" / "b"), 0700u);
  EXPECT_TRUE(make_private_directory(root_ / "a" / "b").ok()) << "an existing one of ours";
}

TEST_F(PrivateDirectoryTest, ASymlinkAFileOrAWritableDirectoryIsRefused) {
  fs::create_directories(root_ / "real");
  fs::create_symlink(root_ / "real", root_ / "link");
  auto link = make_private_directory(root_ / "link");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().message().find("is a symbolic link"), std::string::npos);

  std::ofstream(root_ / "file") << "x";
  EXPECT_FALSE(make_private_directory(root_ / "file").ok());

  fs::create_directories(root_ / "shared");
  ::chmod((root_ / "shared").c_str(), 0775);
  auto shared = make_private_directory(root_ / "shared");
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.error().message().find("may be written by its group or by others"),
            std::string::npos);
}

TEST_F(PrivateDirectoryTest, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  fs::create_directories(root_ / "theirs");
  ASSERT_EQ(::chown((root_ / "theirs").c_str(), 65534, 65534), 0);
  auto theirs = make_private_directory(root_ / "theirs");
  ASSERT_FALSE(theirs.ok());
  EXPECT_NE(theirs.error().message().find("belongs to uid 65534"), std::string::npos);
}

}  // namespace
}  // namespace dormant
