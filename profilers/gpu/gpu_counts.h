// What a session's GPU profiling came to: the profile header's and agent_health's figures.
#pragma once

#include <cstdint>

#include "profilers/gpu/launch_join.h"

namespace dormant::profilers::gpu {

// What the BPF programs could not pass on.
struct GpuLosses {
  uint64_t launches_lost = 0;    // the ring buffer was full
  uint64_t activities_lost = 0;  // the ring buffer was full
  uint64_t unreadable = 0;       // a probe's argument could not be read
};

struct GpuCounts {
  JoinCounts join;
  uint64_t gpu_ns = 0;           // GPU time handed out as samples, joined or not
  uint64_t dropped_records = 0;  // by CUPTI
  GpuLosses lost;
  uint64_t stacks_not_kept = 0;          // launch stacks beyond the table's room
  uint64_t launch_stacks_not_taken = 0;  // launches past the library's rate bound
  // Launches of processes that had exited before their mappings were read: frames "[unknown]".
  uint64_t launches_without_mappings = 0;
  uint64_t launches_with_python = 0;     // launches whose stacks have the thread's Python frames
  uint64_t processes_attached = 0;       // named and followed ones; 0: every one that maps it
  uint64_t processes_not_attached = 0;   // followed past the bound
  uint64_t library_files_refused = 0;    // mapped files not trusted (cuda_processes.h)
  uint64_t records_outside_session = 0;  // GPU work that ended before it or began after it
  uint64_t devices_past_bound = 0;       // pieces of work on devices past DeviceTimes' bound
  uint64_t records_past_bound = 0;       // past JoinedTotals' bound: their time alone kept
  uint64_t records_past_rate = 0;        // past a process's records a second: their time alone kept
  uint64_t gpu_ns_past_wall = 0;  // a process's GPU time on a device past the session's wall time
  // At the last snapshot: launches whose GPU work had not come yet, and work whose launch had not;
  // carried to the next snapshot.
  uint64_t pending_launches = 0;
  uint64_t pending_work = 0;
};

}  // namespace dormant::profilers::gpu
