// Samples on-CPU stacks from a perf_event (one per CPU) and counts them in the kernel: user space
// reads one entry per distinct stack per snapshot, never one per sample.
//
// UAPI headers describe the program's context and maps; the one kernel structure it reads (a
// task's group leader and comm) is declared in kernel_types.h for CO-RE, not taken from vmlinux.h.
#include "cpu_sampler.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/errno.h>

#include "kernel_types.h"

const volatile __u32 filter = DORMANT_FILTER_ALL;

// Sizes are set by the loader between open and load.
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 16384);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, DORMANT_MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct dormant_sample_key);
  __type(value, __u64);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 32768);
  __type(key, __u32);
  __type(value, struct dormant_process);
} processes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} process_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8);
} target_pids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u64);
  __type(value, __u8);
} target_cgroups SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct dormant_drops);
} drops SEC(".maps");

static __always_inline struct dormant_drops* drop_counters(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&drops, &zero);
}

static __always_inline int stack_id(struct bpf_perf_event_data* ctx, __u64 flags) {
  int id = bpf_get_stackid(ctx, &stacks, flags);
  if (id >= 0 || id == -EFAULT) return id;  // -EFAULT: no stack of that kind here
  struct dormant_drops* dropped = drop_counters();
  if (dropped) {
    if (id == -EEXIST)
      __sync_fetch_and_add(&dropped->stack_collision, 1);
    else
      __sync_fetch_and_add(&dropped->stack_lost, 1);
  }
  return id;
}

static __always_inline int same_comm(const char* a, const char* b) {
  const __u64* x = (const __u64*)a;
  const __u64* y = (const __u64*)b;
  return x[0] == y[0] && x[1] == y[1];
}

// The generation of the current process image, announcing the image when it is new. The comm is
// the process's (its main thread's): other threads may carry names of their own.
static __always_inline __u32 process_generation(__u32 tgid) {
  struct dormant_process now = {};
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  BPF_CORE_READ_INTO(&now.comm, task, group_leader, comm);
  struct dormant_process* known = bpf_map_lookup_elem(&processes, &tgid);
  if (known && same_comm(known->comm, now.comm)) return known->generation;
  now.generation = known ? known->generation + 1 : 1;
  if (bpf_map_update_elem(&processes, &tgid, &now, BPF_ANY) != 0) {
    struct dormant_drops* dropped = drop_counters();
    if (dropped) __sync_fetch_and_add(&dropped->processes_full, 1);
    return 0;
  }
  struct dormant_process_event event = {.tgid = tgid, .generation = now.generation};
  __builtin_memcpy(event.comm, now.comm, sizeof(event.comm));
  if (bpf_ringbuf_output(&process_events, &event, sizeof(event), 0) != 0) {
    struct dormant_drops* dropped = drop_counters();
    if (dropped) __sync_fetch_and_add(&dropped->events_lost, 1);
  }
  return now.generation;
}

// The task's cgroup v2 or one of its ancestors is a target: a target cgroup covers its subtree,
// as a perf cgroup event does. Level 0 is the root, never a target.
static __always_inline int in_target_cgroups(void) {
  __u64 own = bpf_get_current_cgroup_id();
  if (bpf_map_lookup_elem(&target_cgroups, &own)) return 1;
  for (int level = 1; level <= DORMANT_MAX_CGROUP_DEPTH; ++level) {
    __u64 ancestor = bpf_get_current_ancestor_cgroup_id(level);
    if (ancestor == 0 || ancestor == own) return 0;
    if (bpf_map_lookup_elem(&target_cgroups, &ancestor)) return 1;
  }
  return 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (filter == DORMANT_FILTER_PIDS && !bpf_map_lookup_elem(&target_pids, &tgid)) return 0;
  if (filter == DORMANT_FILTER_CGROUPS && !in_target_cgroups()) return 0;
  struct dormant_sample_key key = {
      .tgid = tgid,
      .generation = tgid == 0 ? 0 : process_generation(tgid),
      .user_stack_id = stack_id(ctx, BPF_F_USER_STACK),
      .kernel_stack_id = stack_id(ctx, 0),
  };
  __u64* count = bpf_map_lookup_elem(&counts, &key);
  if (count) {
    __sync_fetch_and_add(count, 1);
    return 0;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST) == 0) return 0;
  count = bpf_map_lookup_elem(&counts, &key);  // another CPU added it meanwhile
  if (count) {
    __sync_fetch_and_add(count, 1);
  } else {
    struct dormant_drops* dropped = drop_counters();
    if (dropped) __sync_fetch_and_add(&dropped->counts_full, 1);
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
