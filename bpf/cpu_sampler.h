// The ABI between cpu_sampler.bpf.c and profilers/ebpf: fixed-width types only.
#ifndef DORMANT_BPF_CPU_SAMPLER_H
#define DORMANT_BPF_CPU_SAMPLER_H

#include <linux/types.h>

#define DORMANT_COMM_LEN 16
#define DORMANT_MAX_STACK_DEPTH 127
// Cgroup levels below the root searched for a target cgroup: as deep as list_cgroups walks.
#define DORMANT_MAX_CGROUP_DEPTH 32

enum dormant_filter {
  DORMANT_FILTER_ALL = 0,
  DORMANT_FILTER_PIDS = 1,     // tgids in target_pids
  DORMANT_FILTER_CGROUPS = 2,  // cgroup v2 ids in target_cgroups
};

// One counted stack. A process image is (tgid, generation): the generation changes when the
// process's comm does (an exec), so samples taken before and after an exec are kept apart.
struct dormant_sample_key {
  __u32 tgid;
  __u32 generation;
  __s32 user_stack_id;    // < 0: none (a kernel thread) or lost; see dormant_drops
  __s32 kernel_stack_id;  // < 0: none (sampled in user mode) or lost
};

struct dormant_process {
  char comm[DORMANT_COMM_LEN];
  __u32 generation;
  __u32 pad;
};

// Sent when a process image is first seen, so that user space reads its maps while it lives.
struct dormant_process_event {
  __u32 tgid;
  __u32 generation;
  char comm[DORMANT_COMM_LEN];
};

// Per CPU; every sample that could not be counted exactly is counted here.
struct dormant_drops {
  __u64 counts_full;      // the counts map had no room for a new stack
  __u64 stack_collision;  // a stack's slot in the stack map held another stack (-EEXIST)
  __u64 stack_lost;       // bpf_get_stackid failed otherwise (map full, no memory)
  __u64 processes_full;   // the process map had no room: the sample is counted as generation 0
  __u64 events_lost;      // the ring buffer was full: that process's maps may be read late
};

#endif
