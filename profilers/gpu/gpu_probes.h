// GpuProbes: the loaded gpu_probes BPF programs, attached to the USDT probes of libdormant_cupti.so
// files, and the ring buffer they fill. Attaching raises the library's semaphore in the process
// attached to (or, without one, in every process that maps the file): the library starts
// recording at its next launch. With processes named, the processes they start are followed (their
// events pass the filter; filtered_pids() lists them to attach in). Destroying this detaches
// everything, in reverse order, and the libraries go dormant again.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/gpu_probes.h"
#include "common/result.h"
#include "profilers/gpu/cuda_processes.h"
#include "profilers/gpu/gpu_counts.h"

struct gpu_probes;
struct ring_buffer;
struct bpf_link;

namespace dormant::profilers::gpu {

// One thing the ring buffer carried: a launch, an activity record, or a count of records CUPTI
// dropped. Valid during the call it is handed to.
struct GpuEvent {
  int pid = 0;
  const dormant_cupti_launch* launch = nullptr;  // its `depth` frames are there
  const dormant_cupti_activity* activity = nullptr;
  const char* name = "";  // the activity's kernel name, NUL-terminated
  uint64_t dropped = 0;
};

class GpuProbes {
 public:
  // Loads the programs; with `pids`, they pass on the events of these processes, and of the
  // processes they start, only. A process's GPU records past `records_per_second` (0: no bound)
  // are not passed on but counted, with their time (take_past_rate).
  static Result<std::unique_ptr<GpuProbes>> make(const std::vector<int>& pids,
                                                 uint64_t records_per_second);
  ~GpuProbes();
  GpuProbes(const GpuProbes&) = delete;
  GpuProbes& operator=(const GpuProbes&) = delete;

  // Attaches both programs to `library` in process `pid`; -1: in every process that maps it, now
  // or later.
  Result<void> attach(const LibraryFile& library, int pid);
  size_t attachments() const { return links_.size() / 2; }

  // The processes the filter passes: those named and those they started since.
  std::vector<int> filtered_pids() const;

  // Waits up to `timeout` for events, or until `wake_fd` (an eventfd, which it reads) is written.
  Result<void> wait(std::chrono::milliseconds timeout, int wake_fd);
  // Hands every event in the ring buffer to `on_event`; one thread at a time.
  Result<int> consume(const std::function<void(const GpuEvent&)>& on_event);

  // Summed over CPUs since the previous call.
  GpuLosses take_losses();

  // By process, the records past its rate since the previous call, and their time.
  struct PastRate {
    int pid;
    uint64_t records;
    uint64_t ns;
  };
  std::vector<PastRate> take_past_rate();
  // Lets go of what the probes keep for processes that have exited (their rate, their long
  // names sent), so that their room serves others.
  void forget_processes(const std::vector<int>& exited);

 private:
  GpuProbes() = default;

  struct SkeletonDeleter {
    void operator()(::gpu_probes* skeleton) const;
  };
  struct LinkDeleter {
    void operator()(::bpf_link* link) const;
  };
  struct RingDeleter {
    void operator()(::ring_buffer* ring) const;
  };

  static int on_ring_event(void* context, void* data, size_t size);
  void hand_out(const void* data, size_t size);

  std::unique_ptr<::gpu_probes, SkeletonDeleter> skeleton_;
  std::vector<std::unique_ptr<::bpf_link, LinkDeleter>> links_;
  std::vector<std::unique_ptr<::bpf_link, LinkDeleter>> follow_links_;
  std::unique_ptr<::ring_buffer, RingDeleter> ring_;
  std::mutex consume_mutex_;
  const std::function<void(const GpuEvent&)>* on_event_ = nullptr;  // during consume() only
  uint64_t malformed_ = 0;  // batches of launches that did not parse to their end
  GpuLosses reported_;
  std::unordered_map<int, PastRate> past_rate_reported_;  // by process, as last read
};

}  // namespace dormant::profilers::gpu
