// What the eBPF sampler's unwind tables cost (root): the agent's time and memory and the kernel's
// memory to load the tables of N distinct binaries (default 200, the first ELF files of the
// system's library directory with call-frame information), and how long after a process starts
// its samples are walked by its tables.
//   unwind_bench NO_FRAME_POINTERS_PROGRAM [FILES]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/procfs.h"
#include "common/subprocess.h"
#include "profilers/ebpf/cpu_sampler.h"
#include "profilers/ebpf/ebpf_profiler.h"
#include "profilers/ebpf/unwind_tables.h"

namespace {

using namespace dormant;
using namespace dormant::profilers;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A mapping of the file at `path`'s first executable-looking offset, as /proc/PID/maps shows one.
std::optional<system::Mapping> mapping_of(const std::filesystem::path& path, uint64_t start) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  system::Mapping mapping;
  mapping.start = start;
  mapping.end = start + ((static_cast<uint64_t>(info.st_size) + 4095) & ~uint64_t{4095});
  mapping.offset = 0;
  mapping.device = uint64_t{major(info.st_dev)} << 32 | minor(info.st_dev);
  mapping.inode = info.st_ino;
  mapping.path = path;
  return mapping;
}

std::vector<system::Mapping> distinct_binaries(size_t wanted) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/x86_64-linux-gnu")) {
    if (entry.is_regular_file() && entry.path().string().find(".so") != std::string::npos) {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<system::Mapping> mappings;
  uint64_t start = uint64_t{1} << 40;
  for (const auto& path : paths) {
    if (mappings.size() == wanted) break;
    if (!system::UnwindTable::read(path)) continue;  // not x86_64 ELF with CFI: not counted
    auto mapping = mapping_of(path, start);
    if (!mapping) continue;
    start = mapping->end + (uint64_t{1} << 30);
    mappings.push_back(*mapping);
  }
  return mappings;
}

void tables_of_many_binaries(size_t count) {
  auto binaries = distinct_binaries(count);
  ebpf::CpuSamplerOptions options;
  options.frequency_hz = 1;
  options.pids = {static_cast<int>(::getpid())};
  auto sampler = ebpf::CpuSampler::make(options);
  if (!sampler) {
    std::cerr << "unwind_bench: " << sampler.error().message() << "\n";
    std::exit(1);
  }
  auto before = procfs::memory_usage();
  ebpf::UnwindLimits limits;
  limits.max_table_bytes = uint64_t{1} << 30;
  ebpf::UnwindTables tables((*sampler)->unwind_files_fd(), (*sampler)->unwind_processes_fd(),
                            limits);
  auto start = Clock::now();
  tables.add_process(::getpid(), 1, binaries);
  double took = ms_since(start);
  auto after = procfs::memory_usage();
  auto counts = tables.counts();
  std::printf(
      "tables of %zu distinct binaries: %llu loaded, %llu rows, %.1f MB of kernel memory; read "
      "in %.0f ms (%.2f ms a binary)\n",
      binaries.size(), static_cast<unsigned long long>(counts.files_loaded),
      static_cast<unsigned long long>(counts.rows), counts.kernel_bytes / 1e6, took,
      took / std::max<size_t>(binaries.size(), 1));
  if (before && after) {
    auto mb = [](uint64_t after_kb, uint64_t before_kb) {
      return (static_cast<double>(after_kb) - static_cast<double>(before_kb)) / 1024;
    };
    std::printf(
        "  agent after: USS %+.2f MB, RssAnon %+.2f MB, PSS %+.2f MB (VmRSS %+.2f MB); peak "
        "VmHWM %+.2f MB\n",
        mb(after->uss_kb, before->uss_kb), mb(after->rss_anon_kb, before->rss_anon_kb),
        mb(after->pss_kb, before->pss_kb), mb(after->rss_kb, before->rss_kb),
        mb(after->peak_rss_kb, before->peak_rss_kb));
  }
}

void time_to_tables(const std::string& program) {
  constexpr int kHz = 997;
  ebpf::EbpfProfilerOptions options;
  options.frequency_hz = kHz;
  SpawnOptions spawn;
  spawn.argv = {program, "3"};
  auto child = Subprocess::spawn(spawn);
  if (!child) {
    std::cerr << "unwind_bench: " << child.error().message() << "\n";
    std::exit(1);
  }
  options.pids = {(*child)->pid()};
  ebpf::EbpfProfiler profiler(options);
  if (auto started = profiler.start(); !started) {
    std::cerr << "unwind_bench: " << started.error().message() << "\n";
    std::exit(1);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  (void)profiler.snapshot();
  auto facts = profiler.header_facts();
  profiler.stop();
  uint64_t before = facts["unwind_tables"].value("walks_before_tables", uint64_t{0});
  std::printf(
      "a process's first samples walked before its tables were loaded: %llu at %d Hz (%.0f ms)\n",
      static_cast<unsigned long long>(before), kHz, 1000.0 * before / kHz);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: unwind_bench NO_FRAME_POINTERS_PROGRAM [FILES]\n";
    return 2;
  }
  tables_of_many_binaries(argc > 2 ? std::stoul(argv[2]) : 200);
  time_to_tables(argv[1]);
}
