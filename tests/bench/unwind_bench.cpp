// What the eBPF sampler's unwind tables cost (root): the agent's time and memory and the kernel's
// memory to load the tables of N distinct binaries (default 200, the first ELF files of the
// system's library directory with call-frame information), and how long after a process starts
// its samples are walked by its tables and a Python process's have Python frames.
//   unwind_bench NO_FRAME_POINTERS_PROGRAM PYTHON_RATIO_SCRIPT [FILES]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include <malloc.h>
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

// `wanted` distinct ELF files (by inode: links count once), shared libraries first, then programs.
std::vector<system::Mapping> distinct_binaries(size_t wanted) {
  std::vector<std::filesystem::path> paths;
  for (const char* directory : {"/usr/lib/x86_64-linux-gnu", "/usr/bin"}) {
    std::vector<std::filesystem::path> here;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
      if (entry.is_regular_file() && !entry.is_symlink()) here.push_back(entry.path());
    }
    std::sort(here.begin(), here.end());
    paths.insert(paths.end(), here.begin(), here.end());
  }
  std::vector<system::Mapping> mappings;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  uint64_t start = uint64_t{1} << 40;
  for (const auto& path : paths) {
    if (mappings.size() == wanted) break;
    if (!system::LoadSegments::read(path, path)) continue;  // not ELF: not counted
    auto mapping = mapping_of(path, start);
    if (!mapping || !seen.insert({mapping->device, mapping->inode}).second) continue;
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
  while (tables.load_queued(std::chrono::milliseconds(20))) {
  }
  double took = ms_since(start);
  auto after = procfs::memory_usage();
  ::malloc_trim(0);
  auto trimmed = procfs::memory_usage();
  auto counts = tables.counts();
  std::printf(
      "tables of %zu distinct binaries: %llu loaded, %llu rows, %.1f MB of kernel memory; read "
      "in %.0f ms (%.2f ms a binary)\n",
      binaries.size(), static_cast<unsigned long long>(counts.files_loaded),
      static_cast<unsigned long long>(counts.rows), counts.kernel_bytes / 1e6, took,
      took / std::max<size_t>(binaries.size(), 1));
  std::printf("  %s\n", counts.to_json().dump().c_str());
  if (before && after && trimmed) {
    auto mb = [](uint64_t after_kb, uint64_t before_kb) {
      return (static_cast<double>(after_kb) - static_cast<double>(before_kb)) / 1024;
    };
    std::printf(
        "  agent: USS %+.2f MB, RssAnon %+.2f MB, PSS %+.2f MB (VmRSS %+.2f MB, peak VmHWM "
        "%+.2f MB); after malloc_trim: USS %+.2f MB, RssAnon %+.2f MB\n",
        mb(after->uss_kb, before->uss_kb), mb(after->rss_anon_kb, before->rss_anon_kb),
        mb(after->pss_kb, before->pss_kb), mb(after->rss_kb, before->rss_kb),
        mb(after->peak_rss_kb, before->peak_rss_kb), mb(trimmed->uss_kb, before->uss_kb),
        mb(trimmed->rss_anon_kb, before->rss_anon_kb));
  }
}

// Samples of a process started mid-session (at 997 Hz, so about one a millisecond) whose stack
// lacks what the tables or the Python walk give: how long after its first sample they came.
void time_to_whole_stacks(const std::vector<std::string>& argv, std::string_view comm,
                          const std::function<bool(std::string_view)>& is_whole_frame,
                          std::string_view what) {
  constexpr int kHz = 997;
  ebpf::EbpfProfilerOptions options;
  options.target.frequency_hz = kHz;
  ebpf::EbpfProfiler profiler(options);
  if (auto started = profiler.start(); !started) {
    std::cerr << "unwind_bench: " << started.error().message() << "\n";
    std::exit(1);
  }
  // Past the tables of the processes running at the start, which are read first.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  SpawnOptions spawn;
  spawn.argv = argv;
  auto child = Subprocess::spawn(spawn);
  if (!child) {
    std::cerr << "unwind_bench: " << child.error().message() << "\n";
    std::exit(1);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto table = profiler.snapshot();
  profiler.stop();
  uint64_t total = 0, whole = 0;
  if (table) {
    table->for_each([&](const profile::StackView& stack) {
      if (stack.comm != comm) return;
      total += stack.count;
      for (auto id : stack.frame_ids) {
        if (is_whole_frame(table->string(id))) {
          whole += stack.count;
          break;
        }
      }
    });
  }
  std::printf("%.*s: %llu of its first %llu samples at %d Hz without them (~%.0f ms)\n",
              static_cast<int>(what.size()), what.data(),
              static_cast<unsigned long long>(total - whole),
              static_cast<unsigned long long>(total), kHz, 1000.0 * (total - whole) / kHz);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: unwind_bench NO_FRAME_POINTERS_PROGRAM PYTHON_RATIO_SCRIPT [FILES]\n";
    return 2;
  }
  tables_of_many_binaries(argc > 3 ? std::stoul(argv[3]) : 200);
  time_to_whole_stacks(
      {argv[1], "3"}, "no_frame_pointe", [](std::string_view frame) { return frame == "main"; },
      "a native program started mid-session, samples reaching main");
  time_to_whole_stacks(
      {"/usr/bin/python3.11", argv[2], "3"}, "python3.11",
      [](std::string_view frame) { return frame.ends_with("_[p]"); },
      "a Python program started mid-session, samples with Python frames");
}
