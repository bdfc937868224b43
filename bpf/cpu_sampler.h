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

// Stack ids are seeded 64-bit hashes of the frames; these two never name a stack.
#define DORMANT_STACK_NONE 0  // no stack of that kind: a kernel thread, or a sample in user mode
#define DORMANT_STACK_LOST 1  // its stack map had no room for it

// One counted stack. A process image is (tgid, generation): the generation changes at an exec,
// so samples taken before and after it are kept apart.
struct dormant_sample_key {
  __u32 tgid;
  __u32 generation;
  __u64 user_stack;
  __u64 kernel_stack;
  __u64 python_stack;  // in the user stacks' map: CPython's frames of the sampled thread
};

// Innermost frame first.
struct dormant_stack {
  __u32 depth;
  __u32 pad;
  __u64 ips[DORMANT_MAX_STACK_DEPTH];
};

// What identifies a process image: a pid used again has a later start, an exec a new exec id.
struct dormant_process {
  __u64 start_time;
  __u64 exec_id;
  __u32 generation;
  __u32 pad;
};

// Sent when a process image is first seen, so that user space reads its maps while it lives.
struct dormant_process_event {
  __u32 tgid;
  __u32 generation;
  __u64 user_ip;  // where the announcing sample found its user code; 0: none
  char comm[DORMANT_COMM_LEN];
};

// Per CPU; every sample that could not be counted exactly is counted here.
struct dormant_drops {
  __u64 counts_full;     // the counts map had no room (or no memory) for a new stack
  __u64 stacks_full;     // a stack map had no room (or no memory) for a new stack
  __u64 processes_full;  // the process map had no room (or no memory): counted as generation 0
  __u64 events_lost;     // the ring buffer was full: that process's maps may be read late
};

#endif
