// The eBPF system profiler: CpuSampler counts stacks in the kernel; a reader thread remembers
// each new process image as the kernel announces it; each snapshot drains the counts and names
// their frames with the Symbolizer.
#pragma once

#include <atomic>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "common/profiling_settings.h"
#include "common/unique_fd.h"
#include "inventory/container_metadata.h"
#include "profilers/ebpf/cpu_sampler.h"
#include "profilers/ebpf/hotspot_processes.h"
#include "profilers/ebpf/python_processes.h"
#include "profilers/ebpf/unwind_tables.h"
#include "profilers/ebpf/v8_processes.h"
#include "profilers/profiler.h"
#include "profilers/system/cgroup_selection.h"
#include "profilers/system/java_frames.h"
#include "profilers/system/javascript_frames.h"
#include "profilers/system/python_frames.h"
#include "profilers/system/symbolizer.h"

namespace dormant::profilers::ebpf {

struct EbpfProfilerOptions {
  ProfilingTarget target;  // pids empty: the whole host (or the cgroups below)
  EbpfSettings ebpf;
  std::vector<uint64_t> cgroup_ids;  // cgroup v2 ids (the directory's inode number)
  std::filesystem::path docker_root = "/var/lib/docker";
};

class EbpfProfiler final : public Profiler {
 public:
  explicit EbpfProfiler(EbpfProfilerOptions options);
  ~EbpfProfiler() override { stop(); }

  std::string_view name() const override { return "ebpf"; }
  Result<void> start() override;
  Result<profile::StackTable> snapshot() override;
  void stop() override;
  // It runs no process; this wakes the reader that stop() joins, even when stop() has not got
  // that far.
  void abort() override;

  std::string_view event() const override;
  nlohmann::json header_facts() const override;

 private:
  void read_process_images();
  void wake_reader();
  // Images first seen recently are read again once their loader has mapped their libraries.
  void reread_young_images();
  // Reads the image's mappings and symbols, and gives the walk its unwind tables.
  void remember(const ProcessImage& image);
  // Names a runtime's frame now, while its process lives.
  void remember(const RuntimeFrame& frame);
  // The user frames of a stack, root first, its runtimes' frames named by their runtime.
  void append_user_frames(const CountedStack& stack, std::vector<std::string>& frames);
  // What names the runtime frames of a stack's process image, where it runs one.
  struct RuntimesOf {
    std::shared_ptr<const system::HotSpotVm> jvm;
    std::optional<system::V8Layout> v8;
  };
  // A runtime's frame by name, or by its address's native name where its runtime cannot name it.
  void append_runtime_frame(const CountedStack& stack, const RuntimesOf& runtimes, uint64_t marked,
                            uint64_t word, bool innermost, std::vector<std::string>& frames);
  // Puts a CPython process's Python frames among the user frames from `user_begin` on.
  void add_python_frames(const CountedStack& stack, size_t user_begin,
                         std::vector<std::string>& frames);

  EbpfProfilerOptions options_;
  inventory::ContainerNames container_names_;
  std::unique_ptr<system::Symbolizer> symbolizer_;
  std::unique_ptr<CpuSampler> sampler_;
  std::unique_ptr<UnwindTables> unwind_tables_;  // null: stacks are walked by frame pointer
  std::unique_ptr<PythonProcesses> python_processes_;
  system::PythonFrameNames python_names_;
  std::unique_ptr<HotSpotProcesses> hotspot_processes_;
  system::JavaFrameNames java_names_;
  std::unique_ptr<V8Processes> v8_processes_;
  system::JavaScriptFrameNames javascript_names_;
  std::atomic<bool> stopping_ = false;
  UniqueFd wake_reader_;  // an eventfd, for the life of the profiler: abort() may come any time
  int wake_reader_errno_;
  std::thread reader_;
  struct YoungImage {
    ProcessImage image;
    SteadyClock::time_point reread_at;
  };
  std::deque<YoungImage> young_;  // reader thread only
  bool tables_waiting_ = false;   // reader thread only
};

}  // namespace dormant::profilers::ebpf
