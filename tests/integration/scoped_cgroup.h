// A cgroup made for one test, removed at the end (with its processes gone: kill them first).
#pragma once

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

namespace dormant {

class ScopedCgroup {
 public:
  explicit ScopedCgroup(std::filesystem::path path) : path_(std::move(path)) {
    for (auto dir = path_; !std::filesystem::exists(dir); dir = dir.parent_path()) {
      created_.push_back(dir);
    }
    std::filesystem::create_directories(path_);
  }
  ~ScopedCgroup() {
    for (const auto& dir : created_) {
      for (int attempt = 0; attempt < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY;
           ++attempt) {
        ::usleep(20000);  // its killed processes are still leaving
      }
    }
  }
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;

  void add(pid_t pid) const { std::ofstream(path_ / "cgroup.procs") << pid; }

 private:
  std::filesystem::path path_;
  std::vector<std::filesystem::path> created_;  // deepest first
};

}  // namespace dormant
