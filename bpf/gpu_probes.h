// The ABI between gpu_probes.bpf.c and profilers/gpu: what the ring buffer carries. The
// library's own records (dormant_cupti/probes.h) travel inside these, tagged with the process.
#ifndef DORMANT_BPF_GPU_PROBES_H
#define DORMANT_BPF_GPU_PROBES_H

#include <linux/types.h>

#include "dormant_cupti/probes.h"

#define DORMANT_GPU_NAME_LEN (DORMANT_CUPTI_MAX_NAME_BYTES + 1)

enum dormant_gpu_event_type {
  DORMANT_GPU_LAUNCH = 1,
  DORMANT_GPU_ACTIVITY = 2,
  DORMANT_GPU_DROPPED = 3,
};

// Events come as far as they are used: launches up to their batch's bytes in use, an activity up
// to its name's NUL.
struct dormant_gpu_launch_event {
  __u32 type;
  __u32 tgid;
  struct dormant_cupti_launch_batch launches;  // as the library's batch holds them
};

// A kernel's name comes with each of its records while it is short; a longer one with the first
// of its records only (per process and name address, while there is room to remember it), the
// others' `name` empty and their activity's `name` address saying whose. names_sent's key.
struct name_key {
  __u32 tgid;
  __u32 pad;
  __u64 address;
};
#define DORMANT_GPU_SHORT_NAME_BYTES 255
#define DORMANT_GPU_NAMES_SENT 65536

struct dormant_gpu_activity_event {
  __u32 type;
  __u32 tgid;
  struct dormant_cupti_activity activity;
  char name[DORMANT_GPU_NAME_LEN];  // a kernel's name as the program holds it, cut to fit
};

struct dormant_gpu_dropped_event {
  __u32 type;
  __u32 tgid;
  __u64 dropped;  // activity records CUPTI dropped in that process
};

// Per process: its bound on GPU records a second (a token bucket, rodata records_per_second) and
// what came past it, kept as a count and a time instead of records.
struct dormant_gpu_record_rate {
  __u64 refilled_ns;   // bpf_ktime_get_ns of the tokens' last top-up
  __u64 tokens;        // records it may still pass on
  __u64 past_records;  // since the process was first seen
  __u64 past_ns;       // their durations summed (each at most DORMANT_GPU_MAX_PAST_NS)
};

#define DORMANT_GPU_MAX_PAST_NS 10000000000ULL
#define DORMANT_GPU_RATED_PROCESSES 4096

// Per CPU; what the programs could not pass on.
struct dormant_gpu_losses {
  __u64 launches_lost;    // the ring buffer was full
  __u64 activities_lost;  // the ring buffer was full
  __u64 unreadable;       // the probe's argument could not be read
};

#endif
