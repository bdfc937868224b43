// Throughput and memory of the perf script parser, and the cost of the whole perf.data →
// profile path against `perf script` alone. Prints figures; asserts nothing.
//
//   perf_parse_bench generate FILE MEGABYTES [DISTINCT_STACKS]   write synthetic perf script text
//   perf_parse_bench parse FILE                                  parse any perf script -F +pid text
//   perf_parse_bench flat-memory DIR                             50 MB vs 500 MB, same stacks
//   perf_parse_bench end-to-end PERF_DATA                        perf script alone vs the agent's
//   path
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/line_reader.h"
#include "common/procfs.h"
#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "profile/collapsed.h"
#include "profilers/perf/perf_script.h"
#include "profilers/perf/perf_script_parser.h"

namespace {

using namespace dormant;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
double peak_rss_mb() { return static_cast<double>(procfs::memory_usage()->peak_rss_kb) / 1024.0; }

// Synthetic text shaped like `perf script -F +pid` of a busy host: kernel frames on top of user
// frames, C++ names, process names with spaces.
int generate(const std::string& path, double megabytes, int distinct_stacks) {
  std::mt19937 random(42);
  std::vector<std::string> symbols;
  for (int i = 0; i < 4000; ++i) {
    symbols.push_back(
        i % 7 == 0 ? "std::vector<std::string>::_M_realloc_insert<int>" + std::to_string(i)
                   : "app::module" + std::to_string(i % 50) + "::function_" + std::to_string(i));
  }
  std::vector<std::string> kernel = {"do_syscall_64",  "entry_SYSCALL_64_after_hwframe",
                                     "__x64_sys_read", "ksys_read",
                                     "vfs_read",       "schedule",
                                     "__schedule"};
  std::vector<std::string> stacks;
  for (int s = 0; s < distinct_stacks; ++s) {
    std::string stack;
    int depth = 8 + static_cast<int>(random() % 24);
    if (s % 3 == 0) {
      for (int k = 0; k < 4; ++k) {
        char line[160];
        std::snprintf(line, sizeof(line), "\tffffffff8%07x %s+0x%x ([kernel.kallsyms])\n",
                      static_cast<unsigned>(random() % 0xfffffff),
                      kernel[random() % kernel.size()].c_str(),
                      static_cast<unsigned>(random() % 0x400));
        stack += line;
      }
    }
    for (int f = 0; f < depth; ++f) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "\t    %12lx %s+0x%x (/usr/lib/x86_64-linux-gnu/libapp%d.so)\n",
                    static_cast<unsigned long>(0x7f0000000000 + random() % 0xffffffff),
                    symbols[random() % symbols.size()].c_str(),
                    static_cast<unsigned>(random() % 0x400), static_cast<int>(random() % 8));
      stack += line;
    }
    stacks.push_back(stack);
  }
  std::vector<std::string> comms = {"java", "python3", "my worker (1)", "nginx", "postgres"};
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return 1;
  double target = megabytes * 1e6, written = 0;
  for (uint64_t n = 0; written < target; ++n) {
    int pid = 1000 + static_cast<int>(random() % 200);
    int written_now = std::fprintf(
        out, "%s %d/%d [%03d] %lu.%06lu: 10101010 cpu-clock:ppp: \n%s\n",
        comms[pid % comms.size()].c_str(), pid, pid + 1, static_cast<int>(n % 2), 1000 + n / 1000,
        static_cast<unsigned long>(n % 1000000), stacks[random() % stacks.size()].c_str());
    written += written_now;
  }
  std::fclose(out);
  std::printf("generated %s: %.0f MB, %d distinct stacks\n", path.c_str(), written / 1e6,
              distinct_stacks);
  return 0;
}

struct ParseFigures {
  double megabytes;
  uint64_t lines;
  double seconds;
  double peak_rss_mb;
  uint64_t samples;
  size_t distinct;
};

ParseFigures parse_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  reset_peak_rss();
  profile::StackTable table;
  profilers::perf::PerfScriptParser parser(table);
  LineReader reader(fd.get());
  uint64_t lines = 0;
  auto start = Clock::now();
  for (;;) {
    auto line = reader.next();
    if (!line.ok() || !line->has_value()) break;
    parser.feed(**line);
    ++lines;
  }
  parser.finish();
  double elapsed = seconds_since(start);
  return {static_cast<double>(reader.bytes_read()) / 1e6,
          lines,
          elapsed,
          peak_rss_mb(),
          parser.stats().samples,
          table.distinct_stacks()};
}

void print(const std::string& label, const ParseFigures& f) {
  std::printf(
      "%s: %.0f MB, %lu lines in %.2f s = %.0f MB/s, %.2f M lines/s; %lu samples, %zu "
      "distinct stacks; peak RSS %.1f MB\n",
      label.c_str(), f.megabytes, static_cast<unsigned long>(f.lines), f.seconds,
      f.megabytes / f.seconds, static_cast<double>(f.lines) / f.seconds / 1e6,
      static_cast<unsigned long>(f.samples), f.distinct, f.peak_rss_mb);
}

int flat_memory(const std::string& dir) {
  std::string small = dir + "/bench-50mb.txt", large = dir + "/bench-500mb.txt";
  if (generate(small, 50, 3000) != 0 || generate(large, 500, 3000) != 0) return 1;
  ParseFigures f50 = parse_file(small);
  ParseFigures f500 = parse_file(large);
  print("50 MB", f50);
  print("500 MB", f500);
  std::printf("peak RSS 500 MB / 50 MB: %.2f\n", f500.peak_rss_mb / f50.peak_rss_mb);
  std::remove(small.c_str());
  std::remove(large.c_str());
  return 0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Seconds for `perf script` to write its text to /dev/null.
double time_perf_script_alone(const std::string& perf_data) {
  SpawnOptions options;
  options.argv = {"perf", "script", "-F", "+pid", "-i", perf_data};
  options.stdout_to = Redirect::null();
  auto start = Clock::now();
  auto script = Subprocess::spawn(options);
  if (!script.ok() || !(*script)->wait().ok()) return -1;
  return seconds_since(start);
}

// Seconds from perf.data to the collapsed profile text, the agent's way.
double time_agent_path(const std::string& perf_data, uint64_t& samples) {
  auto start = Clock::now();
  profile::StackTable table;
  profilers::perf::PerfScriptParser parser(table);
  auto outcome =
      profilers::perf::run_perf_script("perf", perf_data, parser, std::chrono::minutes(10));
  std::string collapsed = profile::write_collapsed(table, nlohmann::json::object());
  samples = table.total_samples();
  return outcome.ok() ? seconds_since(start) : -1;
}

// Alternates the two, five times each, so that both see the same machine; compares medians.
int end_to_end(const std::string& perf_data) {
  std::vector<double> alone, ours;
  uint64_t samples = 0;
  for (int run = 0; run < 5; ++run) {
    alone.push_back(time_perf_script_alone(perf_data));
    ours.push_back(time_agent_path(perf_data, samples));
    if (alone.back() < 0 || ours.back() < 0) {
      std::fprintf(stderr, "perf script failed\n");
      return 1;
    }
  }
  std::printf(
      "perf script alone: median %.3f s; perf.data -> collapsed profile: median %.3f s "
      "(%lu samples); ratio %.3f\n",
      median(alone), median(ours), static_cast<unsigned long>(samples),
      median(ours) / median(alone));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "generate" && argc >= 4) {
    return generate(argv[2], std::atof(argv[3]), argc > 4 ? std::atoi(argv[4]) : 3000);
  }
  if (mode == "parse" && argc >= 3) {
    print(argv[2], parse_file(argv[2]));
    return 0;
  }
  if (mode == "flat-memory" && argc >= 3) return flat_memory(argv[2]);
  if (mode == "end-to-end" && argc >= 3) return end_to_end(argv[2]);
  std::fprintf(stderr,
               "usage: perf_parse_bench generate FILE MB [STACKS] | parse FILE | flat-memory DIR | "
               "end-to-end PERF_DATA\n");
  return 2;
}
