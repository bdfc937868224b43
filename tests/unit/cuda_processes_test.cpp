#include "profilers/gpu/cuda_processes.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace dormant::profilers::gpu {
namespace {

namespace fs = std::filesystem;

class CudaProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_ = fs::temp_directory_path() / ("dormant-proc-" + std::to_string(::getpid()));
    fs::remove_all(proc_);
  }
  void TearDown() override { fs::remove_all(proc_); }

  void maps(const std::string& pid, const std::string& text) {
    fs::create_directories(proc_ / pid);
    std::ofstream(proc_ / pid / "maps") << text;
  }

  fs::path proc_;
};

TEST_F(CudaProcessesTest, FindsEachLibraryFileOnceThroughTheProcessesRoot) {
  maps("100",
       "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234 /opt/app/libdormant_cupti.so\n"
       "7f0000002000-7f0000003000 r--p 00001000 08:01 1234 /opt/app/libdormant_cupti.so\n"
       "7f0000004000-7f0000005000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n");
  maps("200", "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234 /opt/app/libdormant_cupti.so\n");
  maps("300", "7f0000000000-7f0000001000 r-xp 00000000 00:2a 77 /usr/lib/libdormant_cupti.so.1\n");
  maps("400", "7f0000004000-7f0000005000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n");
  maps("self", "7f0000000000-7f0000001000 r-xp 00000000 08:01 5 /x/libdormant_cupti.so\n");
  fs::create_directories(proc_ / "500");  // gone meanwhile: no maps
  CudaLibraries found = find_injected_processes(proc_);
  std::sort(found.pids.begin(), found.pids.end());
  EXPECT_EQ(found.pids, (std::vector<int>{100, 200, 300}));
  ASSERT_EQ(found.files.size(), 2u);
  std::sort(found.files.begin(), found.files.end());
  EXPECT_EQ(found.files[0], proc_ / "100" / "root" / "opt/app/libdormant_cupti.so");
  EXPECT_EQ(found.files[1], proc_ / "300" / "root" / "usr/lib/libdormant_cupti.so.1");
}

TEST_F(CudaProcessesTest, NoProcessWithTheLibraryFindsNothing) {
  maps("1", "7f0000004000-7f0000005000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n");
  CudaLibraries found = find_injected_processes(proc_);
  EXPECT_TRUE(found.pids.empty());
  EXPECT_TRUE(found.files.empty());
}

}  // namespace
}  // namespace dormant::profilers::gpu
