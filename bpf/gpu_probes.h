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

// Per CPU; what the programs could not pass on.
struct dormant_gpu_losses {
  __u64 launches_lost;    // the ring buffer was full
  __u64 activities_lost;  // the ring buffer was full
  __u64 unreadable;       // the probe's argument could not be read
};

#endif
