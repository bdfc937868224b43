#include "profilers/gpu/cuda_processes.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dormant::profilers::gpu {
namespace {

namespace fs = std::filesystem;

class CudaProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-proc-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "files");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path proc() const { return root_ / "proc"; }

  // A library file, owned by the test's user, writable by it alone.
  fs::path file(const std::string& name) {
    fs::path path = root_ / "files" / name;
    std::ofstream(path) << name;
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
    return path;
  }

  // Process `pid` maps `mapped` at `range`, named `name` in its maps (map_files links to the file).
  void maps(const std::string& pid, const std::string& range, const fs::path& mapped,
            const std::string& name, const std::string& inode = "1234") {
    fs::create_directories(proc() / pid / "map_files");
    std::ofstream(proc() / pid / "maps", std::ios::app)
        << range << " r-xp 00000000 08:01 " << inode << " " << name << "\n";
    fs::create_symlink(mapped, proc() / pid / "map_files" / range);
  }

  static std::vector<std::string> names(const CudaLibraries& found) {
    std::vector<std::string> names;
    for (const auto& library : found.files) names.push_back(library.name);
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path root_;
};

TEST_F(CudaProcessesTest, FindsEachLibraryFileOnceThroughTheProcessesMappings) {
  fs::path app = file("libdormant_cupti.so");
  fs::path other = file("libdormant_cupti.so.1");
  fs::path libc = file("libc.so.6");
  maps("100", "7f0000000000-7f0000001000", app, "/opt/app/libdormant_cupti.so");
  maps("100", "7f0000002000-7f0000003000", app, "/opt/app/libdormant_cupti.so");
  maps("100", "7f0000004000-7f0000005000", libc, "/usr/lib/libc.so.6");
  maps("200", "7f0000000000-7f0000001000", app, "/opt/app/libdormant_cupti.so");
  maps("300", "7f0000000000-7f0000001000", other, "/usr/lib/libdormant_cupti.so.1");
  maps("400", "7f0000004000-7f0000005000", libc, "/usr/lib/libc.so.6");
  maps("self", "7f0000000000-7f0000001000", app, "/x/libdormant_cupti.so");
  fs::create_directories(proc() / "500");  // gone meanwhile: no maps
  CudaLibraries found = find_injected_processes(proc());
  std::sort(found.pids.begin(), found.pids.end());
  EXPECT_EQ(found.pids, (std::vector<int>{100, 200, 300}));
  EXPECT_EQ(names(found), (std::vector<std::string>{"/opt/app/libdormant_cupti.so",
                                                    "/usr/lib/libdormant_cupti.so.1"}));
  EXPECT_TRUE(found.refused.empty());
  for (const auto& library : found.files) {
    EXPECT_TRUE(library.fd.valid());
    EXPECT_TRUE(fs::is_regular_file(library.path())) << library.path();
  }
}

// A package upgrade replaced the file a long-running service mapped: the service still runs the
// old one, which only its mapping reaches now.
TEST_F(CudaProcessesTest, ADeletedLibraryIsReachedThroughTheMapping) {
  fs::path old = file("libdormant_cupti.so.old");
  maps("100", "7f0000000000-7f0000001000", old, "/usr/lib/dormant/libdormant_cupti.so (deleted)");
  CudaLibraries found = find_injected_processes(proc());
  ASSERT_EQ(found.files.size(), 1u);
  std::ifstream opened(found.files[0].path());
  std::string text;
  opened >> text;
  EXPECT_EQ(text, "libdormant_cupti.so.old");
}

// What another user can put where a mapping's name points, or map under the library's name, is
// not opened to wait on, and not attached to: a FIFO, a file writable by others, one of theirs.
TEST_F(CudaProcessesTest, FilesAUserCouldHaveForgedAreRefusedWithWhy) {
  fs::path fifo = root_ / "files" / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::path writable = file("writable");
  fs::permissions(writable, fs::perms::others_write, fs::perm_options::add);
  maps("100", "7f0000000000-7f0000001000", fifo, "/tmp/a/libdormant_cupti.so", "1");
  maps("200", "7f0000000000-7f0000001000", writable, "/tmp/b/libdormant_cupti.so", "2");
  if (::geteuid() == 0) {
    fs::path theirs = file("theirs");
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    maps("300", "7f0000000000-7f0000001000", theirs, "/tmp/c/libdormant_cupti.so", "3");
  }
  CudaLibraries found = find_injected_processes(proc());
  EXPECT_TRUE(found.files.empty());
  EXPECT_TRUE(found.pids.empty());
  std::string said;
  for (const auto& why : found.refused) said += why + "\n";
  EXPECT_NE(said.find("/tmp/a/libdormant_cupti.so is not attached to: not a regular file"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("/tmp/b/libdormant_cupti.so is not attached to: writable by others"),
            std::string::npos)
      << said;
  if (::geteuid() == 0) {
    EXPECT_NE(said.find("/tmp/c/libdormant_cupti.so is not attached to: owned by uid 65534"),
              std::string::npos)
        << said;
  }
}

TEST_F(CudaProcessesTest, AtMostSixtyFourFilesAreKept) {
  for (int i = 0; i < 70; ++i) {
    fs::path copy = file("copy" + std::to_string(i));
    maps("100", "7f00000" + std::to_string(10000 + i) + "-7f00000" + std::to_string(20000 + i),
         copy, "/opt/" + std::to_string(i) + "/libdormant_cupti.so");
  }
  CudaLibraries found = find_injected_processes(proc());
  EXPECT_EQ(found.files.size(), kMaxLibraryFiles);
  EXPECT_EQ(found.files_refused, 70 - kMaxLibraryFiles);
  EXPECT_LE(found.refused.size(), kMaxRefusalsSaid);
}

TEST_F(CudaProcessesTest, NoProcessWithTheLibraryFindsNothing) {
  maps("1", "7f0000004000-7f0000005000", file("libc.so.6"), "/usr/lib/libc.so.6");
  CudaLibraries found = find_injected_processes(proc());
  EXPECT_TRUE(found.pids.empty());
  EXPECT_TRUE(found.files.empty());
}

}  // namespace
}  // namespace dormant::profilers::gpu
