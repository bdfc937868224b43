// What one session profiles and with what limits: the one value the agent hands its profiler
// module (module/api), whose sections the profilers take as they are (perf, eBPF, GPU). The agent
// builds it from its flags and a command's settings (agent/session_plan.cpp). No server address,
// token or TLS paths.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/profiler_choices.h"

namespace dormant {

// What every profiler samples, and the guard rails they share (0: off).
struct ProfilingTarget {
  int frequency_hz = 11;
  std::vector<int> pids;         // empty: the whole host (or the cgroups below)
  int skip_above_processes = 0;  // a profiler does not start on a host with more processes
  bool use_cgroups = false;      // profile the busiest cgroups rather than the whole host
  int max_cgroups = 50;
  int max_docker_containers = 0;
};

struct PerfSettings {
  std::string path = "perf";
  CallGraph call_graph = CallGraph::kFramePointer;
  int dwarf_stack_size = 8192;
  std::chrono::seconds restart_after{600};
  uint64_t restart_above_rss_bytes = uint64_t{200} << 20;
  std::chrono::seconds script_timeout{300};
  // gProfiler's names, in order of preference: perf records the first this host can count.
  std::vector<std::string> events = {"cycles"};
  // The event an earlier session's perf recorded with on this host: perf starts on it without
  // its trial recording, and tries the events again only if it fails.
  std::string known_event;
};

struct EbpfSettings {
  // Per snapshot; the kernel holds two sets of these maps.
  uint32_t max_stacks = 16384;     // distinct user stacks, and as many kernel ones
  uint32_t max_counted = 16384;    // distinct {process, user stack, kernel stack}
  uint32_t max_processes = 32768;  // process images tracked per session
  bool walk_by_tables = true;      // user stacks by unwind tables, else by frame pointers only
  uint64_t unwind_table_bytes = uint64_t{64} << 20;  // kernel memory for every file's rows
  uint32_t max_python_processes = 0;   // processes whose Python frames are walked at once; 0: all
  uint32_t max_runtime_processes = 0;  // JVMs, and V8 processes, whose frames are named; 0: all
};

// GPU work (kernels, copies) of the programs that load libdormant_cupti.so, under the stacks that
// launched it; the target's pids limit it too.
struct GpuSettings {
  bool enabled = false;
  // The library files to attach to; empty: those the running programs have loaded.
  std::vector<std::string> libraries;
  std::chrono::milliseconds start_deadline{5000};  // past it, the session goes on without it
  uint64_t records_per_second = 250'000;           // a process's, read whole; 0: all
  uint32_t kernel_name_bytes = 4096;               // a kernel's frame's name, past which it is cut
};

struct ProfilingSettings {
  CpuProfilers cpu = CpuProfilers::kEbpfElsePerf;
  ProfilingTarget target;
  PerfSettings perf;
  EbpfSettings ebpf;
  GpuSettings gpu;

  // Where profilers keep work files (perf.data), each entry named NAME-PID-… after the agent
  // process; the agent made it private. Empty: the system's temporary directory.
  std::string work_dir;
  // How long each profiler's stop() may take before its processes are killed.
  std::chrono::milliseconds stop_deadline{10'000};
};

}  // namespace dormant
