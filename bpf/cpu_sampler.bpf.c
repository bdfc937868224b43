// Samples on-CPU stacks from a perf_event (one per CPU) and counts them in the kernel: user space
// reads one entry per distinct stack per snapshot, never one per sample.
//
// The counts and stacks come in two sets. Samples go to the active one while user space drains
// the other: it flips `active_set`, waits until no program that may have read the old value still
// runs (`program_fence`), and then has the idle set to itself, so no sample loses its stack to a
// drain.
//
// User stacks are walked here, by frame pointer, rather than by bpf_get_stackid: the kernel's
// walk reads on until a read faults, and every chain ends in a null frame pointer, so every
// sample paid for a page fault; this walk stops at the null. Stacks are kept under a seeded hash
// of their frames in a hash map, where two stacks never evict one another as they do in a
// stack-trace map.
//
// UAPI headers describe the program's context and maps; the kernel structures it reads are
// declared in kernel_types.h for CO-RE, not taken from vmlinux.h.
#include "cpu_sampler.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/errno.h>

#include "kernel_types.h"

const volatile __u32 filter = DORMANT_FILTER_ALL;
const volatile __u64 stack_hash_seed = 0;  // random per load: frames cannot be chosen to collide
extern int LINUX_KERNEL_VERSION __kconfig;
__u32 last_generation = 0;  // a process never gets a generation twice in a session
__u32 active_set = 0;  // 0 or 1: the set of counts and stacks samples go to; user space flips it

// Sizes, and whether hash maps are preallocated, are set by the loader between open and load.
// User and kernel stacks have a map each: a sample stores at most one stack in each, and a map
// that allocates its entries as it fills has as few as one ready per CPU when it starts.
struct stack_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, struct dormant_stack);
};
struct stack_map user_stacks_0 SEC(".maps");
struct stack_map kernel_stacks_0 SEC(".maps");
struct stack_map user_stacks_1 SEC(".maps");
struct stack_map kernel_stacks_1 SEC(".maps");

struct count_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct dormant_sample_key);
  __type(value, __u64);
};
struct count_map counts_0 SEC(".maps");
struct count_map counts_1 SEC(".maps");

// Never read by the program: an update of a map of maps returns only once every program that was
// running has finished (the kernel waits an RCU grace period), which is what a flip waits for.
struct fence_slot {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} fence_slot SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1);
  __type(key, __u32);
  __array(values, struct fence_slot);
} program_fence SEC(".maps") = {.values = {&fence_slot}};

// Per CPU: where a sample's stacks are put together (too large for the BPF stack), and the process
// image the CPU last sampled, which spares most samples a look-up in the process map.
struct cpu_scratch {
  __u32 last_tgid;
  __u32 last_generation;
  __u64 last_start_time;
  __u64 last_exec_id;
  struct dormant_stack user;
  struct dormant_stack kernel;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cpu_scratch);
} scratch SEC(".maps");

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

static __always_inline __u64 mix(__u64 hash, __u64 value) {
  hash ^= value;
  hash *= 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 32);
}

// The stack's id: a hash of its frames, never one of the reserved ids.
static __always_inline __u64 stack_id(__u64 hash, __u32 depth) {
  hash = mix(hash, depth);
  return hash <= DORMANT_STACK_LOST ? hash + DORMANT_STACK_LOST + 1 : hash;
}

// Stores the stack under `id` in `stacks` unless it is there already; DORMANT_STACK_LOST when it
// cannot (the map is full, or has no memory for another entry).
static __always_inline __u64 keep_stack(void* stacks, __u64 id, struct dormant_stack* stack) {
  if (id == DORMANT_STACK_NONE || bpf_map_lookup_elem(stacks, &id)) return id;
  long stored = bpf_map_update_elem(stacks, &id, stack, BPF_NOEXIST);
  if (stored == 0 || stored == -EEXIST) return id;  // -EEXIST: another CPU stored it
  struct dormant_drops* dropped = drop_counters();
  if (dropped) __sync_fetch_and_add(&dropped->stacks_full, 1);
  return DORMANT_STACK_LOST;
}

// A frame record: where the caller's record is, and where the caller resumes.
struct frame_record {
  __u64 next;
  __u64 return_address;
};

struct user_registers {
  __u64 ip;
  __u64 sp;
  __u64 fp;
  __u64 mode;  // x86: the code segment; arm64: pstate
};

static __always_inline __u32 workers_without_user_stack(void) {
  if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 4, 0)) return DORMANT_PF_USER_WORKER;
  if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 12, 0)) return DORMANT_PF_IO_WORKER;
  return 0;
}

// The registers the current task entered the kernel with: where its user code was when a sample
// comes in kernel mode. Kernel threads and in-kernel workers have none; kernels before 5.15
// (no bpf_task_pt_regs) give none either.
static __always_inline int saved_user_registers(struct user_registers* at) {
  if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) return 0;
  struct task_struct* task = bpf_get_current_task_btf();
  if (BPF_CORE_READ(task, flags) & (DORMANT_PF_KTHREAD | workers_without_user_stack())) return 0;
  struct pt_regs___kernel* regs = (struct pt_regs___kernel*)bpf_task_pt_regs(task);
  if (!regs) return 0;
  at->ip = DORMANT_USER_IP(regs);
  at->sp = DORMANT_USER_SP(regs);
  at->fp = DORMANT_USER_FP(regs);
  at->mode = DORMANT_USER_MODE_OF(regs);
  return 1;
}

// The current task's user stack, walked by frame pointer into `stack`; its id.
static __always_inline __u64 user_stack(struct bpf_perf_event_data* ctx,
                                        struct dormant_stack* stack) {
  struct user_registers at;
  if (DORMANT_IN_USER_MODE(ctx)) {
    at.ip = PT_REGS_IP(&ctx->regs);
    at.sp = PT_REGS_SP(&ctx->regs);
    at.fp = PT_REGS_FP(&ctx->regs);
    at.mode = DORMANT_SAMPLE_MODE(ctx);
  } else if (!saved_user_registers(&at)) {
    return DORMANT_STACK_NONE;
  }
  if (at.ip == 0) return DORMANT_STACK_NONE;
  __u64 hash = mix(stack_hash_seed, at.ip);
  stack->ips[0] = at.ip;
  __u32 depth = 1;
  __u64 fp = at.fp;
  __u64 floor = at.sp;
  // A 32-bit task's frame records are 32-bit: it gets its innermost frame only.
  for (int i = 1; i < DORMANT_MAX_STACK_DEPTH && !DORMANT_IS_COMPAT(at.mode); ++i) {
    // A record lies above the last one, 8-aligned; anything else ends the chain unread.
    if (fp < floor || (fp & 7) != 0) break;
    struct frame_record record;
    if (bpf_probe_read_user(&record, sizeof(record), (const void*)fp) != 0) break;
    __u64 return_address = DORMANT_CODE_ADDRESS(record.return_address);
    if (return_address == 0) break;
    stack->ips[i] = return_address;
    hash = mix(hash, return_address);
    depth = i + 1;
    floor = fp + sizeof(record);
    fp = record.next;
  }
  stack->depth = depth;
  return stack_id(hash, depth);
}

// The kernel stack of the interrupted code into `stack`, and its id; none when the sample came in
// user mode.
static __always_inline __u64 kernel_stack(struct bpf_perf_event_data* ctx,
                                          struct dormant_stack* stack) {
  if (DORMANT_IN_USER_MODE(ctx)) return DORMANT_STACK_NONE;  // spares bpf_get_stack's 1 kB memset
  long bytes = bpf_get_stack(ctx, stack->ips, sizeof(stack->ips), 0);
  if (bytes <= 0) return DORMANT_STACK_NONE;
  __u32 depth = (__u32)bytes / sizeof(__u64);
  __u64 hash = stack_hash_seed;
  for (int i = 0; i < DORMANT_MAX_STACK_DEPTH; ++i) {
    if (i >= depth) break;
    hash = mix(hash, stack->ips[i]);
  }
  stack->depth = depth;
  return stack_id(hash, depth);
}

// Tells user space of a new process image, so that it reads the image's maps while it lives.
static __always_inline void announce(__u32 tgid, __u32 generation, __u64 user_ip,
                                     struct task_struct* leader) {
  struct dormant_process_event event = {.tgid = tgid, .generation = generation, .user_ip = user_ip};
  // The comm is the process's (its main thread's): other threads may carry names of their own.
  BPF_CORE_READ_INTO(&event.comm, leader, comm);
  if (bpf_ringbuf_output(&process_events, &event, sizeof(event), 0) != 0) {
    struct dormant_drops* dropped = drop_counters();
    if (dropped) __sync_fetch_and_add(&dropped->events_lost, 1);
  }
}

// The generation of the current process image, announcing the image when it is new.
static __always_inline __u32 process_generation(__u32 tgid, __u64 user_ip,
                                                struct cpu_scratch* cpu) {
  struct task_struct* leader =
      BPF_CORE_READ((struct task_struct*)bpf_get_current_task(), group_leader);
  struct dormant_process now = {
      .start_time = BPF_CORE_READ(leader, start_time),
      .exec_id = BPF_CORE_READ(leader, self_exec_id),
  };
  if (cpu->last_tgid == tgid && cpu->last_start_time == now.start_time &&
      cpu->last_exec_id == now.exec_id) {
    return cpu->last_generation;
  }
  struct dormant_process* known = bpf_map_lookup_elem(&processes, &tgid);
  if (known && known->start_time == now.start_time && known->exec_id == now.exec_id) {
    now.generation = known->generation;
  } else {
    // Not atomic (that needs BPF_FETCH, 5.12): two CPUs may give one number to two processes at
    // once, which their pids keep apart; it never goes back, so no process gets one twice.
    now.generation = ++last_generation;
    if (bpf_map_update_elem(&processes, &tgid, &now, BPF_ANY) != 0) {
      struct dormant_drops* dropped = drop_counters();
      if (dropped) __sync_fetch_and_add(&dropped->processes_full, 1);
      return 0;
    }
    announce(tgid, now.generation, user_ip, leader);
  }
  cpu->last_tgid = tgid;
  cpu->last_start_time = now.start_time;
  cpu->last_exec_id = now.exec_id;
  cpu->last_generation = now.generation;
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

// Counts the sample under `key` in one set of maps, storing its stacks with its first count.
static __always_inline void count_in(void* counts, void* user_stacks, void* kernel_stacks,
                                     struct dormant_sample_key* key, struct cpu_scratch* cpu) {
  __u64* count = bpf_map_lookup_elem(counts, key);
  if (count) {  // a stack counted before: its frames are stored already
    __sync_fetch_and_add(count, 1);
    return;
  }
  key->user_stack = keep_stack(user_stacks, key->user_stack, &cpu->user);
  key->kernel_stack = keep_stack(kernel_stacks, key->kernel_stack, &cpu->kernel);
  __u64 one = 1;
  if (bpf_map_update_elem(counts, key, &one, BPF_NOEXIST) == 0) return;
  count = bpf_map_lookup_elem(counts, key);  // another CPU added it meanwhile
  if (count) {
    __sync_fetch_and_add(count, 1);
  } else {
    struct dormant_drops* dropped = drop_counters();
    if (dropped) __sync_fetch_and_add(&dropped->counts_full, 1);
  }
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (filter == DORMANT_FILTER_PIDS && !bpf_map_lookup_elem(&target_pids, &tgid)) return 0;
  if (filter == DORMANT_FILTER_CGROUPS && !in_target_cgroups()) return 0;
  __u32 zero = 0;
  struct cpu_scratch* cpu = bpf_map_lookup_elem(&scratch, &zero);
  if (!cpu) return 0;
  __u64 user = user_stack(ctx, &cpu->user);
  __u64 user_ip = user == DORMANT_STACK_NONE ? 0 : cpu->user.ips[0];
  struct dormant_sample_key key = {
      .tgid = tgid,
      .generation = tgid == 0 ? 0 : process_generation(tgid, user_ip, cpu),
      .user_stack = user,
      .kernel_stack = kernel_stack(ctx, &cpu->kernel),
  };
  // Read once: the whole sample goes to one set.
  if (*(volatile __u32*)&active_set == 0) {
    count_in(&counts_0, &user_stacks_0, &kernel_stacks_0, &key, cpu);
  } else {
    count_in(&counts_1, &user_stacks_1, &kernel_stacks_1, &key, cpu);
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
