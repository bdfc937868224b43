// The GPU profiler: GpuProbes brings each launch (with its stack) and each kernel, memcpy and
// memset of the programs that load libdormant_cupti.so; a reader thread joins them (LaunchJoin);
// each snapshot names the launch stacks with the Symbolizer and turns GPU time into samples
// (GpuTimeWeights). Stacks read `[GPU 0];…;launch site;cudaLaunchKernel;[stream 7];[GPU] kernel
// name` (`[graph 3]` for a graph's kernels; `[rank r]` after the device where the process is
// an NCCL rank), so that a flamegraph splits by device; a CPython
// program's have the launching thread's Python frames where its evaluation loops were
// (`train_step (train.py:12)_[p]`, its native frames `_[pn]`), named as the eBPF sampler names
// them.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dormant_cupti/probes.h"

#include "common/profiling_settings.h"
#include "common/unique_fd.h"
#include "inventory/container_metadata.h"
#include "profilers/gpu/cuda_processes.h"
#include "profilers/gpu/device_times.h"
#include "profilers/gpu/gpu_counts.h"
#include "profilers/gpu/gpu_time_weights.h"
#include "profilers/gpu/joined_totals.h"
#include "profilers/gpu/launch_join.h"
#include "profilers/gpu/untaken_stacks.h"
#include "profilers/profiler.h"
#include "profilers/system/python_frames.h"
#include "profilers/system/python_interpreters.h"
#include "profilers/system/symbolizer.h"

namespace dormant::profilers::gpu {

// gpu.enabled is the session's business, not the profiler's. Past gpu.start_deadline, start()
// gives up (CPU profiling goes on without the GPU): reading other processes' mappings and loading
// the probes may block. gpu.records_per_second: one program cannot crowd out the others' records,
// nor cost the agent without bound (the rest are kept as their time alone).
struct GpuProfilerOptions {
  ProfilingTarget target;  // pids: only these processes; empty: every one that loads the library
  GpuSettings gpu;
  JoinLimits join;
  std::filesystem::path docker_root = "/var/lib/docker";
};

class GpuProbes;
struct GpuEvent;

class GpuProfiler final : public Profiler {
 public:
  explicit GpuProfiler(GpuProfilerOptions options);
  ~GpuProfiler() override;

  std::string_view name() const override { return "gpu"; }
  Result<void> start() override;
  Result<profile::StackTable> snapshot() override;
  void before_last_snapshot() override;
  void stop() override;
  void abort() override;
  // Without libraries named, it profiles what the host happens to run: optional.
  bool optional() const override { return options_.gpu.libraries.empty(); }
  nlohmann::json header_facts() const override;

  GpuCounts counts() const;

 private:
  static constexpr size_t kMaxStacks = 65536;
  static constexpr size_t kMaxAttachedProcesses = 256;
  static constexpr size_t kMaxNames = 65536;
  static constexpr size_t kMaxNameBytes = 32u << 20;
  static constexpr size_t kMaxNameAddresses = 65536;
  static constexpr size_t kMaxNameReads = 1024;  // a snapshot, of names whose record was lost
  static constexpr size_t kMaxPlaces = 4096;
  // LaunchStack ids that are not ids: past kMaxStacks, and a launch the library took no stack of.
  static constexpr uint32_t kStackNotKept = UINT32_MAX;
  static constexpr uint32_t kStackNotTaken = UINT32_MAX - 1;
  // GPU times may run this far past the agent's clock (CUPTI interpolates them onto it).
  static constexpr uint64_t kClockSlackNs = 1'000'000'000;
  // A process's GPU time on a device may pass the session's wall time by this much (the two
  // clocks' disagreement) before it is cut.
  static constexpr uint64_t kWallSlackNs = 50'000'000;
  static constexpr uint64_t kFloodKey = UINT64_MAX;  // flood_ns_
  struct Place {
    uint32_t device;
    uint32_t stream;
    uint32_t graph;
    bool operator==(const Place&) const = default;
  };
  struct PlaceHash {
    size_t operator()(const Place& place) const {
      return std::hash<uint64_t>()((uint64_t{place.device} << 32 | place.stream) ^
                                   (uint64_t{place.graph} * 0x9e3779b97f4a7c15ull));
    }
  };
  struct NameAddressHash {
    size_t operator()(const std::pair<int, uint64_t>& key) const {
      return std::hash<uint64_t>()(key.second * 0x9e3779b97f4a7c15ull ^ uint32_t(key.first));
    }
  };
  struct LaunchStack {
    int pid;
    std::vector<uint64_t> frames;  // innermost first
    std::vector<uint64_t> python;  // innermost first: code objects, probes.h's entry bit
  };

  // Attaches in a process the named ones started.
  void attach_in(int pid, std::string& failures);
  void attach_followed();
  void read_events();
  void take_events();
  // With mutex_ held. `latest_ns`: the latest time on CUPTI's clock a record may claim, brought
  // up to date as the call goes on.
  void on_event(const GpuEvent& event, JoinClock::time_point now, uint64_t& latest_ns);
  // A piece of work's device, stream and graph, as an id into places_.
  uint32_t intern_place(const dormant_cupti_activity& activity);
  uint32_t intern_stack(int pid, const dormant_cupti_launch& launch);
  void find_python(int pid, const std::vector<system::Mapping>& mappings);
  void name_python_frames(int pid, const std::vector<uint64_t>& python);
  uint32_t intern_name(const dormant_cupti_activity& activity, const char* name);
  // A piece of work's GPU frame, as an id into names_: a long kernel name is the one that came with
  // its first record of `pid` at that address (bpf/gpu_probes.h); `name` if it is this one.
  uint32_t work_name(int pid, const dormant_cupti_activity& activity, const char* name);
  // The frames of a piece of work's launch, root first, to its API frame.
  std::vector<std::string> launch_frames(const JoinedWork& joined);
  nlohmann::json device_facts() const;
  // A weighted stack's key: the process's container and comm, its device, the launch's frames
  // (`launch`, each after a separator), the work's stream or graph and its GPU frame.
  std::string work_key(const std::pair<std::string, std::string>& process,
                       const std::string& launch, const GpuWork& work) const;
  // A process and device, as handed_ns_ keys them.
  uint64_t process_device(const GpuWork& work) const;
  // By process and device (`sums`: the snapshot's GPU time of each), the share that keeps their
  // session's total within its wall time: a process's share of a device is at most the whole of
  // it (1 but for forged or flooding records, and work overlapping itself on several streams).
  std::unordered_map<uint64_t, double> shares_within_wall_time(
      const std::unordered_map<uint64_t, uint64_t>& sums);
  // Moves the work joined so far into totals_.
  void fold_joined();

  GpuProfilerOptions options_;
  inventory::ContainerNames container_names_;
  std::vector<LibraryFile> files_;  // open while attached
  std::unique_ptr<GpuProbes> probes_;
  std::unique_ptr<system::Symbolizer> symbolizer_;
  std::atomic<bool> stopping_ = false;
  UniqueFd wake_reader_;
  std::thread reader_;

  std::set<int> attached_pids_;  // by the reader thread, once started

  mutable std::mutex mutex_;  // what follows
  bool last_snapshot_ = false;
  LaunchJoin join_;
  GpuTimeWeights weights_;
  std::vector<LaunchStack> stacks_;
  std::unordered_map<std::string, uint32_t> stack_ids_;  // pid and frames, as bytes
  // The processes the symbolizer has remembered: whether it found their mappings.
  std::unordered_map<int, bool> known_pids_;
  system::PythonInterpreters python_interpreters_;
  std::unordered_map<int, system::PythonImage> python_images_;  // the CPython processes
  std::unordered_map<int, uint32_t> ranks_;                     // the NCCL ranks' (nccl_rank.h)
  system::PythonFrameNames python_names_;
  std::string key_;                 // the look-ups' keys are put together here
  std::vector<std::string> names_;  // GPU frames, "[GPU] ..."
  std::unordered_map<std::string, uint32_t> name_ids_;
  size_t names_bytes_ = 0;
  std::unordered_map<std::pair<int, uint64_t>, uint32_t, NameAddressHash>
      kernel_names_;  // by process and name address
  size_t name_reads_left_ = kMaxNameReads;
  std::vector<Place> places_;  // places_[0] stands for every one beyond kMaxPlaces
  std::unordered_map<Place, uint32_t, PlaceHash> place_ids_;
  // The session on CUPTI's clock: GPU work outside it is dropped, and cut to it.
  uint64_t session_start_ns_ = 0;
  uint64_t last_snapshot_ns_ = 0;
  mutable DeviceTimes device_times_;                  // totals() merges what it holds
  std::unordered_map<uint64_t, uint64_t> handed_ns_;  // GPU time handed out, by pid and device
  UntakenStacks untaken_stacks_;
  JoinedTotals totals_;    // joined work, summed by stack, until the snapshot
  uint64_t flood_ns_ = 0;  // past LaunchJoin's bound, of no known process
  GpuCounts counts_;
};

}  // namespace dormant::profilers::gpu
