// Samples on-CPU stacks from a perf_event (one per CPU) and counts them in the kernel: user space
// reads one entry per distinct stack per snapshot, never one per sample.
//
// The counts and stacks come in two sets. Samples go to the active one while user space drains
// the other: it flips `active_set`, waits until no program that may have read the old value still
// runs (`program_fence`), and then has the idle set to itself, so no sample loses its stack to a
// drain.
//
// User stacks are walked here rather than by bpf_get_stackid. Two programs walk them two ways:
// on_cpu_sample by frame pointer (the kernel's walk reads on until a read faults, and every chain
// ends in a null frame pointer, so every sample paid for a page fault; this walk stops at the
// null), on_cpu_sample_cfi (x86_64) by the unwind tables user space loads from each file's
// call-frame information (unwind.h), by frame pointer where an address has no row. Stacks are
// kept under a seeded hash of their frames in a hash map, where two stacks never evict one
// another as they do in a stack-trace map.
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

#include "hotspot.h"
#include "kernel_types.h"
#include "python.h"
#include "runtime_frames.h"
#include "unwind.h"
#include "v8.h"

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
// Where a walk by the unwind tables stands, between its steps.
struct table_walk {
  __u64 ip;
  __u64 sp;
  __u64 fp;
  __u64 hash;
  struct dormant_unwind_process_key process;
  __u32 depth;
  __u32 low;  // a binary search's bounds
  __u32 high;
  __u8 exact_ip;  // ip is where the code was, not a return address (the first frame, a signal's)
  __u8 fp_known;
};

// Where a walk of a CPython thread's frames stands, between its steps.
struct python_walk {
  struct dormant_python_process process;
  struct dormant_python_code seen;
  __u64 pthread;
  __u64 thread;
  __u64 frame;
  __u64 hash;
  __u32 depth;
  __u32 found;
};

struct cpu_scratch {
  __u32 last_tgid;
  __u32 last_generation;
  __u64 last_start_time;
  __u64 last_exec_id;
  struct table_walk walk;
  struct python_walk python_walk;
  struct dormant_stack user;
  struct dormant_stack kernel;
  struct dormant_stack python;
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

// Each file's rows (unwind.h), an array map of its own size under the file's id.
struct unwind_rows {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
  // Sizes, not types: the program reads rows only through pointers, of which BTF keeps no layout.
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(struct dormant_unwind_row));
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __array(values, struct unwind_rows);
} unwind_files SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct dormant_unwind_process_key);
  __type(value, struct dormant_unwind_process);
} unwind_processes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct dormant_unwind_counts);
} unwind_counts SEC(".maps");

// CPython processes: where their runtime is and how to walk it (python.h), by process image.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct dormant_unwind_process_key);
  __type(value, struct dormant_python_process);
} python_processes SEC(".maps");

// The thread state each thread of a CPython process was last found at, checked at every use.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u64);
} python_threads SEC(".maps");

// HotSpot JVMs: where their code cache and interpreter are (hotspot.h), by process image.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct dormant_unwind_process_key);
  __type(value, struct dormant_hotspot_process);
} hotspot_processes SEC(".maps");

// V8 processes (node): where a JavaScript frame keeps its function (v8.h), by process image.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct dormant_unwind_process_key);
  __type(value, struct dormant_v8_process);
} v8_processes SEC(".maps");

// The runtime frames announced (runtime_frames.h), per process image.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct dormant_runtime_frame);
  __type(value, __u8);
} runtime_frames SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} runtime_frame_events SEC(".maps");

// The code objects announced, per process image.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct dormant_python_code);
  __type(value, __u8);
} python_codes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024);
} python_code_events SEC(".maps");

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

// Where the current task's user code was at the sample: the sample's registers when it came in
// user mode, else those the task entered the kernel with. 0: it has none.
static __always_inline int sampled_user_registers(struct bpf_perf_event_data* ctx,
                                                  struct user_registers* at) {
  if (DORMANT_IN_USER_MODE(ctx)) {
    at->ip = PT_REGS_IP(&ctx->regs);
    at->sp = PT_REGS_SP(&ctx->regs);
    at->fp = PT_REGS_FP(&ctx->regs);
    at->mode = DORMANT_SAMPLE_MODE(ctx);
  } else if (!saved_user_registers(at)) {
    return 0;
  }
  return at->ip != 0;
}

// The user stack from `at`, walked by frame pointer into `stack`; its id.
static __always_inline __u64 walk_by_frame_pointer(struct user_registers* at,
                                                   struct dormant_stack* stack) {
  __u64 hash = mix(stack_hash_seed, at->ip);
  stack->ips[0] = at->ip;
  __u32 depth = 1;
  __u64 fp = at->fp;
  __u64 floor = at->sp;
  // A 32-bit task's frame records are 32-bit: it gets its innermost frame only.
  for (int i = 1; i < DORMANT_MAX_STACK_DEPTH && !DORMANT_IS_COMPAT(at->mode); ++i) {
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

#if defined(__TARGET_ARCH_x86)
static __always_inline __u64 read_user_word(__u64 address) {
  __u64 word = 0;
  if (bpf_probe_read_user(&word, sizeof(word), (const void*)address) != 0) return 0;
  return word;
}

static __always_inline __u8 read_user_byte(__u64 address) {
  __u8 byte = 0;
  if (bpf_probe_read_user(&byte, sizeof(byte), (const void*)address) != 0) return 0;
  return byte;
}

static __always_inline int push_frame(struct cpu_scratch* cpu, __u64 ip) {
  struct table_walk* walk = &cpu->walk;
  __u32 depth = walk->depth;
  if (depth >= DORMANT_MAX_STACK_DEPTH) return 0;
  cpu->user.ips[depth] = ip;
  walk->hash = mix(walk->hash, ip);
  walk->depth = depth + 1;
  return 1;
}

// Rewrites the frame pushed last (the one at walk->ip) as a runtime's frame (runtime_frames.h) and
// adds the word that names it.
static __always_inline int mark_runtime_frame(struct cpu_scratch* cpu, __u64 marks, __u64 name) {
  struct table_walk* walk = &cpu->walk;
  __u32 depth = walk->depth;
  if (depth == 0 || depth >= DORMANT_MAX_STACK_DEPTH) return 0;
  struct dormant_runtime_frame frame = {
      .tgid = walk->process.tgid,
      .generation = walk->process.generation,
      .marked = walk->ip | DORMANT_RUNTIME_FRAME | marks,
      .word = name,
  };
  cpu->user.ips[depth - 1] = frame.marked;
  cpu->user.ips[depth] = name;
  walk->hash = mix(mix(walk->hash, marks), name);
  walk->depth = depth + 1;
  if (!bpf_map_lookup_elem(&runtime_frames, &frame)) {
    __u8 yes = 1;
    bpf_map_update_elem(&runtime_frames, &frame, &yes, BPF_ANY);
    bpf_ringbuf_output(&runtime_frame_events, &frame, sizeof(frame), 0);
  }
  return 1;
}

// The binary searches keep their bounds in the CPU's scratch, not in registers: a value read
// from a map is one the verifier does not track, so each step of a search is checked once, not
// once per path that led to it (which took the verifier ~1 s and 700,000 instructions).

// The mapping of `process` holding `ip`, or null.
static __always_inline struct dormant_unwind_mapping* mapping_of(
    struct cpu_scratch* cpu, struct dormant_unwind_process* process, __u64 ip) {
  struct table_walk* walk = &cpu->walk;
  walk->low = 0;
  walk->high = process->count;
  for (int i = 0; i <= DORMANT_UNWIND_MAPPING_STEPS; ++i) {  // the last with start <= ip
    __u32 low = *(volatile __u32*)&walk->low;
    __u32 high = *(volatile __u32*)&walk->high;
    if (low >= high) break;
    __u32 middle = (low + high) / 2;
    if (process->mappings[middle & (DORMANT_UNWIND_MAX_MAPPINGS - 1)].start <= ip) {
      walk->low = middle + 1;
    } else {
      walk->high = middle;
    }
  }
  __u32 found = *(volatile __u32*)&walk->low;
  if (found == 0 || found > DORMANT_UNWIND_MAX_MAPPINGS) return 0;
  struct dormant_unwind_mapping* mapping =
      &process->mappings[(found - 1) & (DORMANT_UNWIND_MAX_MAPPINGS - 1)];
  return ip < mapping->end ? mapping : 0;
}

// The row in force at `pc` of a file's rows, or null.
static __always_inline struct dormant_unwind_row* row_of(struct cpu_scratch* cpu, void* rows,
                                                         __u32 pc) {
  __u32 zero = 0;
  struct dormant_unwind_row* header = bpf_map_lookup_elem(rows, &zero);
  if (!header) return 0;
  struct table_walk* walk = &cpu->walk;
  walk->low = 1;
  walk->high = header->pc + 1;
  for (int i = 0; i <= DORMANT_UNWIND_SEARCH_STEPS; ++i) {  // the last with row.pc <= pc
    __u32 low = *(volatile __u32*)&walk->low;
    __u32 high = *(volatile __u32*)&walk->high;
    if (low >= high) break;
    __u32 middle = (low + high) / 2;
    struct dormant_unwind_row* row = bpf_map_lookup_elem(rows, &middle);
    if (!row) return 0;
    if (row->pc <= pc) {
      walk->low = middle + 1;
    } else {
      walk->high = middle;
    }
  }
  __u32 last = *(volatile __u32*)&walk->low - 1;
  if (last == 0) return 0;
  return bpf_map_lookup_elem(rows, &last);
}

// A V8 process's frame at walk->ip, if it is a JavaScript function's: below its saved fp, where
// other frames keep a Smi marking their type, it keeps its context and its JSFunction, both heap
// objects.
static __always_inline void mark_javascript_frame(struct cpu_scratch* cpu) {
  struct table_walk* walk = &cpu->walk;
  const struct dormant_v8_process* v8 = bpf_map_lookup_elem(&v8_processes, &walk->process);
  if (!v8) return;
  __u64 context = read_user_word(walk->fp + v8->context_offset);
  __u64 function = read_user_word(walk->fp + v8->function_offset);
  if ((context & v8->heap_object_tag_mask) != v8->heap_object_tag ||
      (function & v8->heap_object_tag_mask) != v8->heap_object_tag) {
    return;
  }
  mark_runtime_frame(cpu, (__u64)DORMANT_V8_FUNCTION << DORMANT_RUNTIME_KIND_SHIFT, function);
}

// One step by frame pointer, where no row says how to step; 1 ends the walk.
static __always_inline int step_by_frame_pointer(struct cpu_scratch* cpu,
                                                 struct dormant_unwind_counts* counts) {
  struct table_walk* walk = &cpu->walk;
  if (!walk->fp_known || walk->fp < walk->sp || (walk->fp & 7) != 0) return 1;
  mark_javascript_frame(cpu);
  struct frame_record record;
  if (bpf_probe_read_user(&record, sizeof(record), (const void*)walk->fp) != 0) return 1;
  if (record.return_address == 0) return 1;
  walk->sp = walk->fp + sizeof(record);
  walk->fp = record.next;
  walk->ip = record.return_address;
  walk->exact_ip = 0;
  if (counts) counts->frames_by_fp++;
  return !push_frame(cpu, walk->ip);
}

// Out of a signal handler's trampoline: on to the code the signal interrupted.
static __always_inline int step_through_signal(struct cpu_scratch* cpu) {
  struct table_walk* walk = &cpu->walk;
  __u64 saved[(DORMANT_UCONTEXT_RIP - DORMANT_UCONTEXT_RBP) / 8 + 1];
  if (bpf_probe_read_user(saved, sizeof(saved), (const void*)(walk->sp + DORMANT_UCONTEXT_RBP))) {
    return 1;
  }
  walk->fp = saved[0];
  walk->sp = saved[(DORMANT_UCONTEXT_RSP - DORMANT_UCONTEXT_RBP) / 8];
  walk->ip = saved[(DORMANT_UCONTEXT_RIP - DORMANT_UCONTEXT_RBP) / 8];
  walk->fp_known = 1;
  walk->exact_ip = 1;
  if (walk->ip == 0) return 1;
  return !push_frame(cpu, walk->ip);
}

// HotSpot: a JVM's Java frames, where no file's table covers the code (hotspot.h).

// Segments a code blob's start is searched back for: 16 hops of up to 254 segments, 260 kB of
// code with 64-byte segments.
#define DORMANT_HOTSPOT_SEGMENT_HOPS 16
// Words past a compiled frame's size searched for its return address: compiled code sometimes
// pushes a few more than its frame size says.
#define DORMANT_HOTSPOT_RETURN_SLOTS 4

static __always_inline int in_code_cache(const struct dormant_hotspot_process* jvm, __u64 address) {
  return address >= jvm->code_low && address < jvm->code_high;
}

// The CodeBlob holding `ip`, found by its code heap's segment map; 0 where none is.
static __always_inline __u64 hotspot_blob_at(const struct dormant_hotspot_process* jvm, __u64 ip) {
  __u64 low = 0;
  __u64 map = 0;
  for (int i = 0; i < DORMANT_HOTSPOT_MAX_HEAPS; ++i) {
    if (i < jvm->heap_count && ip >= jvm->heaps[i].low && ip < jvm->heaps[i].high) {
      low = jvm->heaps[i].low;
      map = jvm->heaps[i].segment_map;
    }
  }
  if (low == 0) return 0;
  __u32 shift = jvm->segment_shift & 31;
  __u64 segment = (ip - low) >> shift;
  for (int hop = 0; hop < DORMANT_HOTSPOT_SEGMENT_HOPS; ++hop) {
    __u8 tag = 0xff;
    if (bpf_probe_read_user(&tag, sizeof(tag), (const void*)(map + segment)) != 0) return 0;
    if (tag == 0) return low + (segment << shift) + jvm->heap_block_size;
    if (tag == 0xff || tag > segment) return 0;
    segment -= tag;
  }
  return 0;
}

// Goes on to the caller of a frame whose caller's sp is `sender_sp`, its fp `fp`.
static __always_inline int step_to_caller(struct cpu_scratch* cpu, __u64 sender_sp, __u64 fp,
                                          __u64 return_address,
                                          struct dormant_unwind_counts* counts) {
  struct table_walk* walk = &cpu->walk;
  if (sender_sp <= walk->sp || return_address == 0) return 1;
  walk->sp = sender_sp;
  walk->fp = fp;
  walk->fp_known = 1;
  walk->ip = return_address;
  walk->exact_ip = 0;
  if (counts) counts->frames_by_java++;
  return !push_frame(cpu, return_address);
}

// An interpreted frame: its frame pointer leads to its Method*, its caller's sp, fp and pc.
static __always_inline int step_interpreted(struct cpu_scratch* cpu,
                                            struct dormant_unwind_counts* counts) {
  struct table_walk* walk = &cpu->walk;
  if (!walk->fp_known || walk->fp < walk->sp) return 1;
  __u64 frame[2 - DORMANT_INTERPRETER_METHOD];  // from the Method* up to the return address
  if (bpf_probe_read_user(frame, sizeof(frame),
                          (const void*)(walk->fp + 8 * DORMANT_INTERPRETER_METHOD)) != 0) {
    return 1;
  }
  __u64 method = frame[0];
  __u64 sender_sp = frame[DORMANT_INTERPRETER_SENDER_SP - DORMANT_INTERPRETER_METHOD];
  __u64 link = frame[-DORMANT_INTERPRETER_METHOD];
  __u64 return_address = frame[1 - DORMANT_INTERPRETER_METHOD];
  if (!mark_runtime_frame(cpu, (__u64)DORMANT_JAVA_INTERPRETED << DORMANT_RUNTIME_KIND_SHIFT,
                          method)) {
    return 1;
  }
  if (sender_sp < walk->fp + 16) return 1;
  return step_to_caller(cpu, sender_sp, link, return_address, counts);
}

// Whether the innermost frame's code at `ip` is a compiled method's epilogue, its frame popped
// but for the return address: at `pop rbp` (1: rbp still on the stack), after it at the
// safepoint poll (cmp rsp, [r15 + poll]; ja) or at `ret` (2).
static __always_inline int in_epilogue(__u64 ip) {
  __u8 code[16];
  if (bpf_probe_read_user(code, sizeof(code), (const void*)ip) != 0) return 0;
  if (code[0] == 0x5d) return 1;
  if (code[0] == 0xc3) return 2;
  if (code[0] == 0x49 && code[1] == 0x3b && code[2] == 0xa7 && code[7] == 0x0f && code[8] == 0x87 &&
      code[13] == 0xc3) {
    return 2;
  }
  if (code[0] == 0x0f && code[1] == 0x87 && code[6] == 0xc3) return 2;
  return 0;
}

// A compiled method's or a stub's frame: its size is in its CodeBlob.
static __always_inline int step_compiled(struct cpu_scratch* cpu,
                                         const struct dormant_hotspot_process* jvm, __u64 blob,
                                         struct dormant_unwind_counts* counts) {
  struct table_walk* walk = &cpu->walk;
  __u64 name_at = read_user_word(blob + jvm->blob_name);
  __u32 kind = 0;
  if (name_at == 0 || bpf_probe_read_user(&kind, sizeof(kind), (const void*)name_at) != 0) {
    return 1;
  }
  __s32 frame_words = 0;
  __s32 frame_complete = 0;
  bpf_probe_read_user(&frame_words, sizeof(frame_words),
                      (const void*)(blob + jvm->blob_frame_size));
  bpf_probe_read_user(&frame_complete, sizeof(frame_complete),
                      (const void*)(blob + jvm->blob_frame_complete));
  __u64 code_begin = read_user_word(blob + jvm->blob_code_begin);
  // "nmet(hod)" and "nati(ve nmethod)": a compiled Java method; any other name is a stub's.
  int compiled = kind == 0x74656d6e || kind == 0x6974616e;
  if (compiled) {
    __u64 method = read_user_word(blob + jvm->nmethod_method);
    __s32 level = 0;
    bpf_probe_read_user(&level, sizeof(level), (const void*)(blob + jvm->nmethod_comp_level));
    __u64 marks = ((__u64)DORMANT_JAVA_COMPILED << DORMANT_RUNTIME_KIND_SHIFT) |
                  ((__u64)(level & 0xf) << DORMANT_RUNTIME_LEVEL_SHIFT);
    if (!mark_runtime_frame(cpu, marks, method)) return 1;
  } else if (!mark_runtime_frame(cpu, (__u64)DORMANT_JAVA_STUB << DORMANT_RUNTIME_KIND_SHIFT,
                                 blob)) {
    return 1;
  }
  __u64 sp = walk->sp;
  if (frame_words <= 0 || frame_words > (1 << 17)) {
    // No size (the stubs that call Java): a frame pointer's frame.
    if (!walk->fp_known || walk->fp < sp) return 1;
    struct frame_record record;
    if (bpf_probe_read_user(&record, sizeof(record), (const void*)walk->fp) != 0) return 1;
    return step_to_caller(cpu, walk->fp + sizeof(record), record.next, record.return_address,
                          counts);
  }
  if (walk->exact_ip) {
    // Interrupted in the prologue or epilogue, the frame is not whole: its return address is on
    // top of the stack, under the caller's rbp once that is pushed.
    int popped = 0;
    if (walk->ip < code_begin + (__u64)frame_complete) {
      popped = read_user_byte(walk->ip - 1) == 0x55 ? 1 : 2;  // just after `push rbp`, or before
    } else {
      popped = in_epilogue(walk->ip);
    }
    if (popped == 1) {
      __u64 words[2] = {};
      if (bpf_probe_read_user(words, sizeof(words), (const void*)sp) != 0) return 1;
      return step_to_caller(cpu, sp + 16, words[0], words[1], counts);
    }
    if (popped == 2) return step_to_caller(cpu, sp + 8, walk->fp, read_user_word(sp), counts);
  }
  __u64 sender_sp = sp + (__u64)frame_words * 8;
  __u64 slots[DORMANT_HOTSPOT_RETURN_SLOTS + 1] = {};
  if (bpf_probe_read_user(slots, sizeof(slots), (const void*)(sender_sp - 16)) != 0) return 1;
  for (int i = 0; i < DORMANT_HOTSPOT_RETURN_SLOTS; ++i) {
    // Compiled code returns into the code cache only; a stub may return to the VM's own code.
    if (in_code_cache(jvm, slots[i + 1]) || (!compiled && i == 0)) {
      return step_to_caller(cpu, sender_sp + 8 * i, slots[i], slots[i + 1], counts);
    }
  }
  return 1;
}

// One step out of a Java frame; -1: `walk->ip` is not in a JVM's code cache.
static __always_inline int step_through_java(struct cpu_scratch* cpu,
                                             struct dormant_unwind_counts* counts) {
  struct table_walk* walk = &cpu->walk;
  const struct dormant_hotspot_process* jvm =
      bpf_map_lookup_elem(&hotspot_processes, &walk->process);
  if (!jvm || !in_code_cache(jvm, walk->ip)) return -1;
  if (walk->ip >= jvm->interpreter_low && walk->ip < jvm->interpreter_high) {
    return step_interpreted(cpu, counts);
  }
  __u64 blob = hotspot_blob_at(jvm, walk->ip);
  if (blob == 0) return 1;
  return step_compiled(cpu, jvm, blob, counts);
}

// A step from code no file's table covers: Java's, or else by frame pointer.
static __always_inline int step_outside_tables(struct cpu_scratch* cpu,
                                               struct dormant_unwind_counts* counts) {
  int java = step_through_java(cpu, counts);
  return java >= 0 ? java : step_by_frame_pointer(cpu, counts);
}

// One step of a walk by the unwind tables, from the frame in the CPU's scratch to its caller;
// bpf_loop's callback: 1 ends the walk.
static int unwind_step(__u32 index, void* context) {
  __u32 zero = 0;
  struct cpu_scratch* cpu = bpf_map_lookup_elem(&scratch, &zero);
  if (!cpu) return 1;
  struct dormant_unwind_counts* counts = bpf_map_lookup_elem(&unwind_counts, &zero);
  struct table_walk* walk = &cpu->walk;
  struct dormant_unwind_process* process = bpf_map_lookup_elem(&unwind_processes, &walk->process);
  if (!process) return step_outside_tables(cpu, counts);
  struct dormant_unwind_mapping* mapping = mapping_of(cpu, process, walk->ip);
  if (!mapping || mapping->file == 0) return step_outside_tables(cpu, counts);
  __u32 file = mapping->file;
  // A return address is looked up one byte back, inside the call: the call may be a function's
  // last instruction.
  __u64 pc = walk->ip - mapping->bias - (walk->exact_ip ? 0 : 1);
  void* rows = bpf_map_lookup_elem(&unwind_files, &file);
  if (!rows) {
    if (counts) counts->no_table++;
    return step_by_frame_pointer(cpu, counts);
  }
  if (pc > 0xffffffffULL) return step_by_frame_pointer(cpu, counts);
  struct dormant_unwind_row* row = row_of(cpu, rows, (__u32)pc);
  if (!row) return step_by_frame_pointer(cpu, counts);
  __u8 kinds = row->kinds;
  __u64 offset = (__u64)row->cfa_offset * 8;
  __u64 cfa = 0;
  switch (DORMANT_UNWIND_CFA_KIND(kinds)) {
    case DORMANT_CFA_SP:
      cfa = walk->sp + offset;
      break;
    case DORMANT_CFA_FP:
      if (!walk->fp_known) return 1;
      cfa = walk->fp + offset;
      break;
    case DORMANT_CFA_PLT:
      cfa = walk->sp + offset + ((__s64)(walk->ip & 15) >= row->fp_offset ? 8 : 0);
      break;
    case DORMANT_CFA_SIGNAL:
      return step_through_signal(cpu);
    case DORMANT_CFA_END:
      if (counts) counts->complete++;
      return 1;
    default:
      return step_by_frame_pointer(cpu, counts);
  }
  if (cfa <= walk->sp) return 1;  // a caller's frame is above its callee's
  __u64 return_address = 0;
  if (bpf_probe_read_user(&return_address, sizeof(return_address), (const void*)(cfa - 8)) != 0 ||
      return_address == 0) {
    return 1;
  }
  switch (DORMANT_UNWIND_FP_KIND(kinds)) {
    case DORMANT_FP_AT_CFA: {
      __u64 saved = 0;
      __s64 at = (__s64)row->fp_offset * 8;
      walk->fp_known = bpf_probe_read_user(&saved, sizeof(saved), (const void*)(cfa + at)) == 0;
      walk->fp = saved;
      break;
    }
    case DORMANT_FP_SAME:
      break;
    default:
      walk->fp_known = 0;
  }
  walk->sp = cfa;
  walk->ip = return_address;
  walk->exact_ip = 0;
  if (counts) counts->frames_by_table++;
  return !push_frame(cpu, return_address);
}

// The user stack from `at`, walked by the unwind tables of process image {tgid, generation}
// into the CPU's scratch; its id.
static __always_inline __u64 walk_by_tables(struct cpu_scratch* cpu, struct user_registers* at,
                                            __u32 tgid, __u32 generation) {
  struct table_walk* walk = &cpu->walk;
  walk->ip = at->ip;
  walk->sp = at->sp;
  walk->fp = at->fp;
  walk->fp_known = 1;
  walk->exact_ip = 1;
  walk->depth = 0;
  walk->hash = stack_hash_seed;
  walk->process.tgid = tgid;
  walk->process.generation = generation;
  push_frame(cpu, at->ip);
  if (!bpf_map_lookup_elem(&unwind_processes, &walk->process)) {
    __u32 zero = 0;
    struct dormant_unwind_counts* counts = bpf_map_lookup_elem(&unwind_counts, &zero);
    if (counts) counts->no_process++;
  }
  bpf_loop(DORMANT_MAX_STACK_DEPTH - 1, unwind_step, 0, 0);
  __u32 depth = walk->depth;
  cpu->user.depth = depth;
  return stack_id(walk->hash, depth);
}
#endif

#if defined(__TARGET_ARCH_x86)
// One step of the search for the current thread's state among a CPython process's threads;
// bpf_loop's callback: 1 ends the search.
static int python_thread_step(__u32 index, void* context) {
  __u32 zero = 0;
  struct cpu_scratch* cpu = bpf_map_lookup_elem(&scratch, &zero);
  if (!cpu) return 1;
  struct python_walk* walk = &cpu->python_walk;
  if (!walk->thread) return 1;
  if (read_user_word(walk->thread + walk->process.thread_pthread) == walk->pthread) {
    walk->found = 1;
    return 1;
  }
  walk->thread = read_user_word(walk->thread + walk->process.thread_next);
  return 0;
}

// One step of the walk of a CPython thread's frames, innermost first, into the CPU's Python
// stack (python.h); bpf_loop's callback: 1 ends the walk.
static int python_frame_step(__u32 index, void* context) {
  __u32 zero = 0;
  struct cpu_scratch* cpu = bpf_map_lookup_elem(&scratch, &zero);
  if (!cpu) return 1;
  struct python_walk* walk = &cpu->python_walk;
  const struct dormant_python_process* python = &walk->process;
  __u64 frame = walk->frame;
  if (!frame) return 1;
  walk->frame = read_user_word(frame + python->frame_previous);
  __u32 depth = walk->depth;
  if (python->frame_owner >= 0 &&
      read_user_byte(frame + python->frame_owner) == python->owned_by_c_stack) {
    // An evaluation loop's entry: the frame recorded last was the first it ran.
    if (depth >= 2 && depth <= DORMANT_MAX_PYTHON_FRAMES * 2) {
      cpu->python.ips[depth - 2] |= DORMANT_PYTHON_ENTRY;
    }
    return 0;
  }
  if (depth >= DORMANT_MAX_PYTHON_FRAMES * 2) return 1;
  __u64 code = read_user_word(frame + python->frame_code);
  if (python->every_frame_is_entry ||
      (python->frame_is_entry >= 0 && read_user_byte(frame + python->frame_is_entry))) {
    code |= DORMANT_PYTHON_ENTRY;
  }
  __u64 instruction = read_user_word(frame + python->frame_instruction);
  walk->seen.code = code & ~DORMANT_PYTHON_ENTRY;
  if (!bpf_map_lookup_elem(&python_codes, &walk->seen)) {
    __u8 yes = 1;
    bpf_map_update_elem(&python_codes, &walk->seen, &yes, BPF_ANY);
    bpf_ringbuf_output(&python_code_events, &walk->seen, sizeof(walk->seen), 0);
  }
  cpu->python.ips[depth] = code;
  cpu->python.ips[depth + 1] = instruction;
  walk->hash = mix(mix(walk->hash, code), instruction);
  walk->depth = depth + 2;
  return 0;
}

// The current thread's Python frames into the CPU's Python stack, if its process is a CPython
// one whose runtime user space gave (python_processes); their id.
static __always_inline __u64 python_stack(struct cpu_scratch* cpu,
                                          struct dormant_unwind_process_key* process) {
  struct dormant_python_process* python = bpf_map_lookup_elem(&python_processes, process);
  if (!python) return DORMANT_STACK_NONE;
  struct python_walk* walk = &cpu->python_walk;
  walk->process = *python;
  walk->seen.tgid = process->tgid;
  walk->seen.generation = process->generation;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  walk->pthread = BPF_CORE_READ(task, thread.fsbase);
  if (walk->pthread == 0) return DORMANT_STACK_NONE;
  // Where the thread's state was last found, if it is still the thread's; else searched for.
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64* known = bpf_map_lookup_elem(&python_threads, &tid);
  walk->thread = known ? *known : 0;
  walk->found = 0;
  if (walk->thread && read_user_word(walk->thread + python->thread_pthread) == walk->pthread) {
    walk->found = 1;
  } else {
    __u64 interpreter = read_user_word(python->runtime + python->runtime_interpreters_head);
    walk->thread = interpreter ? read_user_word(interpreter + python->interpreter_threads_head) : 0;
    bpf_loop(DORMANT_MAX_PYTHON_THREADS, python_thread_step, 0, 0);
    if (walk->found) bpf_map_update_elem(&python_threads, &tid, &walk->thread, BPF_ANY);
  }
  if (!walk->found) return DORMANT_STACK_NONE;
  __u64 frame = read_user_word(walk->thread + python->thread_frame);
  if (frame && python->cframe_current_frame >= 0) {
    frame = read_user_word(frame + python->cframe_current_frame);
  }
  walk->frame = frame;
  walk->depth = 0;
  walk->hash = mix(stack_hash_seed, 0x707974686f6eULL);  // apart from native stacks
  bpf_loop(DORMANT_MAX_PYTHON_FRAMES + 8, python_frame_step, 0, 0);
  __u32 depth = walk->depth;
  if (depth == 0) return DORMANT_STACK_NONE;
  cpu->python.depth = depth;
  return stack_id(walk->hash, depth);
}
#endif

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
  key->python_stack = keep_stack(user_stacks, key->python_stack, &cpu->python);
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

// Counts one sample; `by_tables`: its user stack is walked by the unwind tables.
static __always_inline int sample(struct bpf_perf_event_data* ctx, int by_tables) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (filter == DORMANT_FILTER_PIDS && !bpf_map_lookup_elem(&target_pids, &tgid)) return 0;
  if (filter == DORMANT_FILTER_CGROUPS && !in_target_cgroups()) return 0;
  __u32 zero = 0;
  struct cpu_scratch* cpu = bpf_map_lookup_elem(&scratch, &zero);
  if (!cpu) return 0;
  struct user_registers at = {};
  int in_user_code = sampled_user_registers(ctx, &at);
  __u32 generation = tgid == 0 ? 0 : process_generation(tgid, in_user_code ? at.ip : 0, cpu);
  __u64 user = DORMANT_STACK_NONE;
  if (in_user_code) {
#if defined(__TARGET_ARCH_x86)
    if (by_tables && !DORMANT_IS_COMPAT(at.mode)) {
      user = walk_by_tables(cpu, &at, tgid, generation);
    } else {
      user = walk_by_frame_pointer(&at, &cpu->user);
    }
#else
    user = walk_by_frame_pointer(&at, &cpu->user);
#endif
  }
  struct dormant_sample_key key = {
      .tgid = tgid,
      .generation = generation,
      .user_stack = user,
      .kernel_stack = kernel_stack(ctx, &cpu->kernel),
  };
#if defined(__TARGET_ARCH_x86)
  if (by_tables && in_user_code && tgid != 0) {
    struct dormant_unwind_process_key process = {.tgid = tgid, .generation = generation};
    key.python_stack = python_stack(cpu, &process);
  }
#endif
  // Read once: the whole sample goes to one set.
  if (*(volatile __u32*)&active_set == 0) {
    count_in(&counts_0, &user_stacks_0, &kernel_stacks_0, &key, cpu);
  } else {
    count_in(&counts_1, &user_stacks_1, &kernel_stacks_1, &key, cpu);
  }
  return 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data* ctx) { return sample(ctx, 0); }

#if defined(__TARGET_ARCH_x86)
SEC("perf_event")
int on_cpu_sample_cfi(struct bpf_perf_event_data* ctx) { return sample(ctx, 1); }
#endif

#include "followed_children.h"

char LICENSE[] SEC("license") = "GPL";
