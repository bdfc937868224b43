// A JIT's perf map read as Node and the JVM write it, as it grows, and as a hostile program might:
// junk lines, overflowing ranges, endless lines, names with separators, another user's file, a
// link, a FIFO, a file past the bytes read.
#include "profilers/system/perf_map.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;

std::string named(const PerfMap& map, uint64_t address) {
  auto name = map.name_at(address);
  return name ? std::string(*name) : "(none)";
}

TEST(PerfMapTest, NodesAndTheJvmsLinesNameTheirRanges) {
  PerfMap map;
  map.add_text(
      "34649b88ad76 b JS:~alpha /tmp/ratio.js:2:15\n"
      "7f5414006580 2d0 JS:*spin /tmp/ratio.js:1:14\n"
      "0x7f0000001000 0x40 void Known.alphaJava()\n");
  EXPECT_EQ(map.entries(), 3u);
  EXPECT_EQ(named(map, 0x34649b88ad76), "JS:~alpha /tmp/ratio.js:2:15");
  EXPECT_EQ(named(map, 0x34649b88ad80), "JS:~alpha /tmp/ratio.js:2:15");
  EXPECT_EQ(named(map, 0x34649b88ad81), "(none)") << "past its size";
  EXPECT_EQ(named(map, 0x7f5414006580 + 0x2cf), "JS:*spin /tmp/ratio.js:1:14");
  EXPECT_EQ(named(map, 0x7f0000001010), "void Known.alphaJava()");
  EXPECT_EQ(named(map, 0x1000), "(none)");
}

TEST(PerfMapTest, ALineComesWholeHoweverItIsCut) {
  PerfMap map;
  map.add_text("1000 10 fir");
  EXPECT_EQ(map.entries(), 0u) << "its newline has not come";
  map.add_text("st\n20");
  map.add_text("00 10 second\n");
  EXPECT_EQ(named(map, 0x1008), "first");
  EXPECT_EQ(named(map, 0x2008), "second");
}

TEST(PerfMapTest, NewerCodeNamesTheAddressesItTookOver) {
  PerfMap map;
  map.add_text("1000 100 old\n2000 10 untouched\n");
  map.add_text("1080 100 new\n");
  EXPECT_EQ(named(map, 0x1010), "(none)") << "the old code's range is given up whole";
  EXPECT_EQ(named(map, 0x1100), "new");
  EXPECT_EQ(named(map, 0x2000), "untouched");
}

TEST(PerfMapTest, HostileLinesAreSkippedAndCounted) {
  PerfMapLimits limits;
  limits.max_entries = 3;
  PerfMap map(limits);
  map.add_text("not a line\n");
  map.add_text("zz 10 bad start\n1000 0 empty\n1000 10\n");
  map.add_text("ffffffffffffff00 1000 past the end of memory\n");
  map.add_text("1000 10 " + std::string(PerfMap::kMaxLineBytes, 'x') + "\n");
  EXPECT_EQ(map.entries(), 0u);
  EXPECT_EQ(map.skipped_lines(), 6u);
  map.add_text("1000 10 a;b\x1b[31mc\n2000 10 " + std::string(5000, 'n') + "\n");
  EXPECT_EQ(named(map, 0x1000), "a:b?[31mc") << "no frame separator, no control character";
  EXPECT_EQ(named(map, 0x2000).size(), PerfMap::kMaxNameBytes);
  map.add_text("3000 10 third\n4000 10 beyond the bound\n");
  EXPECT_EQ(map.entries(), 3u);
  EXPECT_EQ(map.skipped_lines(), 7u);
}

class PerfMapFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dormant-perf-map-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PerfMapFileTest, WhatTheJitAppendsIsReadAtTheNextRead) {
  fs::path path = dir_ / "perf-1.map";
  std::ofstream(path) << "1000 10 first\n2000 10 sec";
  PerfMap map;
  ASSERT_TRUE(map.read_more(path, ::geteuid()).ok());
  EXPECT_EQ(map.entries(), 1u);
  std::ofstream(path, std::ios::app) << "ond\n3000 10 third\n";
  ASSERT_TRUE(map.read_more(path, ::geteuid()).ok());
  EXPECT_EQ(named(map, 0x2000), "second");
  EXPECT_EQ(named(map, 0x3000), "third");
}

TEST_F(PerfMapFileTest, OnlyTheProcesssUsersRegularFileIsRead) {
  fs::path path = dir_ / "perf-1.map";
  std::ofstream(path) << "1000 10 first\n";
  PerfMap map;
  EXPECT_FALSE(map.read_more(path, ::geteuid() + 1).ok()) << "another user's file";
  fs::create_symlink(path, dir_ / "perf-2.map");
  EXPECT_FALSE(map.read_more(dir_ / "perf-2.map", ::geteuid()).ok()) << "a link";
  ASSERT_EQ(::mkfifo((dir_ / "perf-3.map").c_str(), 0600), 0);
  EXPECT_FALSE(map.read_more(dir_ / "perf-3.map", ::geteuid()).ok()) << "a FIFO, without blocking";
  EXPECT_FALSE(map.read_more(dir_ / "perf-4.map", ::geteuid()).ok()) << "none";
  EXPECT_EQ(map.entries(), 0u);
}

TEST_F(PerfMapFileTest, AFileLargerThanTheBoundIsReadToTheBound) {
  fs::path path = dir_ / "perf-1.map";
  std::ofstream(path) << "1000 10 first\n";
  fs::resize_file(path, 1ull << 40);  // a terabyte, sparse: zeros without a newline
  PerfMapLimits limits;
  limits.max_bytes = 1 << 20;
  PerfMap map(limits);
  ASSERT_TRUE(map.read_more(path, ::geteuid()).ok());
  EXPECT_EQ(map.bytes_read(), limits.max_bytes);
  EXPECT_EQ(named(map, 0x1000), "first");
  ASSERT_TRUE(map.read_more(path, ::geteuid()).ok());
  EXPECT_EQ(map.bytes_read(), limits.max_bytes) << "nothing more, however often asked";
}

TEST(PerfMapFile, AProcesssMapIsReadWhereItSeesIt) {
  // This process's own map, in /tmp as it sees it: what a JIT in it would write.
  fs::path path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
  ASSERT_FALSE(fs::exists(path)) << "a stale map of this pid";
  std::ofstream(path) << "1000 10 first\n";
  PerfMap map;
  ASSERT_TRUE(map.read_more_of(::getpid()).ok());
  std::ofstream(path, std::ios::app) << "2000 10 second\n";
  ASSERT_TRUE(map.read_more_of(::getpid()).ok());
  fs::remove(path);
  EXPECT_EQ(named(map, 0x1004), "first");
  EXPECT_EQ(named(map, 0x2004), "second");
  EXPECT_FALSE(map.read_more_of(999999999).ok()) << "no such process";
}

}  // namespace
}  // namespace dormant::profilers::system
