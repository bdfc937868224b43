// How fast the upload spool drains after an outage: PROFILES profiles (30,000 by default, about
// 1 KB each) are left in a spool directory as an earlier run leaves them, then the spool is opened
// and DRAIN of them (all by default) are taken oldest first and removed, as delivered uploads are.
// Prints profiles drained per second and the CPU they cost; asserts nothing.
//
//   spool_drain_bench [PROFILES [DRAIN]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "agent/profile_spool.h"

namespace {

namespace fs = std::filesystem;

double cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  size_t profiles = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 30'000;
  size_t drain = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : profiles;
  fs::path directory =
      fs::temp_directory_path() / ("spool-drain-bench-" + std::to_string(::getpid()));
  fs::create_directories(directory);
  std::string body(1024, 'x');
  for (size_t i = 0; i < profiles; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "%015llu-%06zu.upload", 1'764'000'000'000ULL + i,
                  i % 1'000'000);
    std::ofstream(directory / name) << "2026-11-26T10:00:00\n" << body;
  }
  auto wall = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  // The file cap applies to new profiles: every one left by the earlier run is taken.
  auto spool = dormant::agent::ProfileSpool::open(directory, uint64_t{1} << 40);
  if (!spool) {
    std::fprintf(stderr, "%s\n", spool.error().message().c_str());
    return 1;
  }
  size_t drained = 0;
  for (; drained < drain; ++drained) {
    auto oldest = (*spool)->oldest_upload();
    if (!oldest) break;
    (*spool)->remove_upload(oldest->key);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  double cpu_used = cpu_seconds() - cpu;
  std::printf("%zu profiles spooled, %zu drained in %.2f s (%.2f s CPU): %.0f uploads/s\n",
              profiles, drained, seconds, cpu_used, static_cast<double>(drained) / seconds);
  fs::remove_all(directory);
  return 0;
}
