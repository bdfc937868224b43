// CpuSampler: the loaded and attached cpu_sampler BPF program. It owns the skeleton (programs and
// maps), one perf event and BPF link per CPU, and the ring buffer reader; destroying it releases
// all of them in reverse order, so no BPF object of ours outlives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

struct cpu_sampler;
struct ring_buffer;
struct bpf_link;

namespace dormant::profilers::ebpf {

struct CpuSamplerOptions {
  int frequency_hz = 11;
  std::vector<int> pids;             // filter on these processes; empty: no pid filter
  std::vector<uint64_t> cgroup_ids;  // or on these cgroup v2 ids; empty: no cgroup filter
  // Per snapshot; the kernel holds two sets of these maps (one filled while the other is drained).
  uint32_t max_stacks = 16384;     // distinct user stacks per snapshot, and as many kernel ones
  uint32_t max_counted = 16384;    // distinct {process, user stack, kernel stack} per snapshot
  uint32_t max_processes = 32768;  // process images tracked per session
  // Walk user stacks by the unwind tables (x86_64, Linux 6.1+), by frame pointer where an address
  // has no row; false: by frame pointer only.
  bool walk_by_tables = true;
  uint32_t max_unwind_processes = 8192;  // process images whose mappings the walk knows
  uint32_t max_unwind_files = 4096;      // files whose tables are loaded at once
};

// How the walks by table went since the sampler started, summed over CPUs.
struct UnwindWalks {
  uint64_t frames_by_table = 0;          // caller frames a row found
  uint64_t frames_by_frame_pointer = 0;  // caller frames found by frame pointer, with no row
  uint64_t frames_by_java = 0;           // callers of Java frames, by the JVM's own structures
  uint64_t walks_without_process = 0;    // of process images whose mappings were not loaded yet
  uint64_t steps_without_table = 0;      // from files whose table was not loaded
  uint64_t walks_complete = 0;           // that reached the outermost frame
};

// A process image the program saw for the first time (a new process, or one that exec'd).
struct ProcessImage {
  int pid = 0;
  uint32_t generation = 0;
  std::string comm;
  uint64_t user_ip = 0;  // where the first sample found its user code; 0: in none
};

// A Python code object the sampler met for the first time in a process image.
struct PythonCode {
  int pid = 0;
  uint32_t generation = 0;
  uint64_t code = 0;
};

// A runtime's frame (bpf/runtime_frames.h: its two words) the sampler met for the first time in
// a process image, or again after the map of those seen gave it up.
struct RuntimeFrame {
  int pid = 0;
  uint32_t generation = 0;
  uint64_t marked = 0;
  uint64_t word = 0;
};

// What poll_images() hands over, each as it arrives.
struct SamplerEvents {
  std::function<void(const ProcessImage&)> on_image;
  std::function<void(const PythonCode&)> on_python_code;
  std::function<void(const RuntimeFrame&)> on_runtime_frame;
};

// One counted stack, innermost frame first. An empty span: no such stack (a kernel thread has no
// user stack; a sample taken in user mode has no kernel stack) or a lost one (see `lost`).
struct CountedStack {
  int pid = 0;
  uint32_t generation = 0;
  uint64_t count = 0;
  std::span<const uint64_t> user;
  std::span<const uint64_t> kernel;
  // A CPython process's Python frames of the sampled thread (bpf/python.h): pairs of code object
  // and instruction pointer, innermost first.
  std::span<const uint64_t> python;
  bool user_lost = false;  // the stack could not be recorded or was gone when read
  bool kernel_lost = false;
};

// Samples not counted exactly, summed over CPUs since the previous snapshot.
struct SamplerDrops {
  uint64_t counts_full = 0;
  uint64_t stacks_full = 0;
  uint64_t processes_full = 0;
  uint64_t events_lost = 0;
  uint64_t total() const { return counts_full + stacks_full + processes_full + events_lost; }
};

class CpuSampler {
 public:
  static constexpr size_t kMaxStackDepth = 127;  // frames kept per stack, as perf keeps

  // Loads the program with `options` and attaches it to a cpu-clock (or cycles) event on every
  // online CPU. Errors say why in words a user can act on: privileges, BTF, the verifier's log.
  static Result<std::unique_ptr<CpuSampler>> make(const CpuSamplerOptions& options);
  ~CpuSampler();
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  const std::string& event() const { return event_; }  // "cpu-clock" or "cycles"
  // Whether user stacks are walked by the unwind tables; when not, why not.
  bool walks_by_tables() const { return walks_by_tables_; }
  const std::string& why_frame_pointers() const { return why_frame_pointers_; }
  // The maps UnwindTables fills: valid while this sampler lives.
  int unwind_files_fd() const;
  int unwind_processes_fd() const;
  int python_processes_fd() const;   // what PythonProcesses fills
  int hotspot_processes_fd() const;  // what HotSpotProcesses fills
  int v8_processes_fd() const;       // what V8Processes fills
  UnwindWalks unwind_walks() const;
  int cpus() const { return static_cast<int>(links_.size()); }

  // Waits up to `timeout` (kNoTimeout: no limit) for process images, Python code objects and
  // runtime frames, or until `wake_fd` (an eventfd, which it reads) is written, handing each that
  // arrived to `events`.
  static constexpr std::chrono::milliseconds kNoTimeout{-1};
  Result<int> poll_images(std::chrono::milliseconds timeout, int wake_fd,
                          const SamplerEvents& events);

  // Takes every stack counted since the previous drain out of the kernel and hands each to
  // `on_stack`. Sampling goes on meanwhile, into the other set of maps, so no sample loses its
  // stack to a drain.
  Result<void> drain(const std::function<void(const CountedStack&)>& on_stack);
  // Forgets processes that have exited, so that their slots serve new ones and a pid used again
  // starts a new image.
  void forget_processes(const std::vector<int>& pids);

  // The samples dropped since the previous call.
  SamplerDrops take_drops();

 private:
  CpuSampler() = default;

  struct SkeletonDeleter {
    void operator()(::cpu_sampler* skeleton) const;
  };
  struct LinkDeleter {
    void operator()(::bpf_link* link) const;
  };
  struct RingDeleter {
    void operator()(::ring_buffer* ring) const;
  };

  using Skeleton = std::unique_ptr<::cpu_sampler, SkeletonDeleter>;
  // Opens the program, sizes its maps (allocating their entries as they fill, or all at load) and
  // loads it into the kernel.
  static Result<Skeleton> load_skeleton(const CpuSamplerOptions& options, bool allocate_as_filled,
                                        bool by_tables);
  // Sends samples to the other set of maps, waits until none can reach the one they went to, and
  // returns that one, idle now.
  Result<uint32_t> flip_sets();

  Skeleton skeleton_;
  std::vector<std::unique_ptr<::bpf_link, LinkDeleter>> links_;         // each owns its perf event
  std::vector<std::unique_ptr<::bpf_link, LinkDeleter>> follow_links_;  // the children's
  std::unique_ptr<::ring_buffer, RingDeleter> ring_;
  const SamplerEvents* events_ = nullptr;  // during poll_images() only
  std::string event_;
  bool walks_by_tables_ = false;
  std::string why_frame_pointers_;
  SamplerDrops reported_;  // the totals the previous take_drops() saw
};

}  // namespace dormant::profilers::ebpf
