// Passes libdormant_cupti.so's probes to user space: each launch (with the launching thread's
// stack, unwound by the library) and each batch of kernel, memcpy and memset records, through one
// ring buffer. These are uprobes (kprobe-type programs) of their own: they never tail-call the
// perf_event CPU sampler, which the kernel forbids across program types.
#include "gpu_probes.h"

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <stdbool.h>
#include <stddef.h>
// In this order: usdt.bpf.h uses what the others declare.
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "kernel_types.h"

const volatile __u32 filter_pids = 0;         // 1: only the processes in target_pids
const volatile __u64 records_per_second = 0;  // GPU records a process may pass on; 0: all

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u8);
} target_pids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 * 1024 * 1024);  // a burst of ~100,000 launches and their records
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct dormant_gpu_losses);
} losses SEC(".maps");

// Not preallocated, as an LRU map would be: a session that meets few processes and few long names
// pays for those alone. Full, a process past them goes unbounded and a long name is sent each time.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, DORMANT_GPU_RATED_PROCESSES);
  __type(key, __u32);
  __type(value, struct dormant_gpu_record_rate);
} record_rates SEC(".maps");

// The long kernel names passed on, by process and address: such a name goes once with the first
// of its records; the others carry its address only (CUPTI's name of a kernel is shared by its
// records).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, DORMANT_GPU_NAMES_SENT);
  __type(key, struct name_key);
  __type(value, __u8);
} names_sent SEC(".maps");

// Per CPU: where an event is put together before only its used part (the stack's frames, the
// name's bytes) goes into the ring buffer.
union scratch_event {
  struct dormant_gpu_launch_event launch;
  struct dormant_gpu_activity_event activity;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, union scratch_event);
} scratch SEC(".maps");

static __always_inline union scratch_event* scratch_event(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline struct dormant_gpu_losses* loss_counters(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&losses, &zero);
}

// The process's bucket, topped up for the time since its last top-up (at most a second's worth);
// null when there is no bound.
static __always_inline struct dormant_gpu_record_rate* record_rate(__u32 tgid) {
  if (records_per_second == 0) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct dormant_gpu_record_rate* rate = bpf_map_lookup_elem(&record_rates, &tgid);
  if (!rate) {
    struct dormant_gpu_record_rate full = {.refilled_ns = now, .tokens = records_per_second};
    bpf_map_update_elem(&record_rates, &tgid, &full, BPF_NOEXIST);
    return bpf_map_lookup_elem(&record_rates, &tgid);
  }
  __u64 elapsed = now > rate->refilled_ns ? now - rate->refilled_ns : 0;
  if (elapsed >= 1000000000ULL) {
    rate->tokens = records_per_second;
    rate->refilled_ns = now;
    return rate;
  }
  __u64 added = elapsed * records_per_second / 1000000000ULL;
  if (added > 0) {  // the fraction of a record left over stays owed
    rate->refilled_ns += added * 1000000000ULL / records_per_second;
    rate->tokens =
        rate->tokens + added < records_per_second ? rate->tokens + added : records_per_second;
  }
  return rate;
}

// Whether the process may pass one more record on; if not, the record is counted and its time
// kept in its bucket.
static __always_inline int within_rate(struct dormant_gpu_record_rate* rate,
                                       const struct dormant_cupti_activity* activity) {
  if (!rate) return 1;
  if (rate->tokens > 0) {
    rate->tokens -= 1;
    return 1;
  }
  __u64 ns = activity->end_ns > activity->start_ns ? activity->end_ns - activity->start_ns : 0;
  if (ns > DORMANT_GPU_MAX_PAST_NS) ns = DORMANT_GPU_MAX_PAST_NS;
  __sync_fetch_and_add(&rate->past_records, 1);
  __sync_fetch_and_add(&rate->past_ns, ns);
  return 0;
}

static __always_inline int wanted(__u32 tgid) {
  return !filter_pids || bpf_map_lookup_elem(&target_pids, &tgid) != 0;
}

SEC("usdt")
int BPF_USDT(on_launch, void* batch_address) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!wanted(tgid)) return 0;
  struct dormant_gpu_losses* lost = loss_counters();
  union scratch_event* scratch = scratch_event();
  if (!scratch) return 0;
  struct dormant_gpu_launch_event* event = &scratch->launch;
  struct dormant_cupti_launch_batch* batch = batch_address;
  event->type = DORMANT_GPU_LAUNCH;
  event->tgid = tgid;
  if (bpf_probe_read_user(&event->launches, offsetof(struct dormant_cupti_launch_batch, data),
                          batch) != 0) {
    if (lost) __sync_fetch_and_add(&lost->unreadable, 1);
    return 0;
  }
  __u32 bytes = event->launches.bytes;
  if (bytes > DORMANT_CUPTI_LAUNCH_BATCH_BYTES) bytes = DORMANT_CUPTI_LAUNCH_BATCH_BYTES;
  event->launches.bytes = bytes;
  if (bpf_probe_read_user(event->launches.data, bytes, batch->data) != 0) {
    if (lost) __sync_fetch_and_add(&lost->unreadable, 1);
    return 0;
  }
  __u64 size = offsetof(struct dormant_gpu_launch_event, launches.data) + bytes;
  if (bpf_ringbuf_output(&events, event, size, 0) != 0 && lost) {
    __sync_fetch_and_add(&lost->launches_lost, event->launches.count);
  }
  return 0;
}

SEC("usdt")
int BPF_USDT(on_activity, void* batch_address) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!wanted(tgid)) return 0;
  struct dormant_cupti_batch* batch = batch_address;
  struct dormant_gpu_losses* lost = loss_counters();
  __u32 count = 0;
  __u64 dropped = 0;
  if (bpf_probe_read_user(&count, sizeof(count), &batch->count) != 0 ||
      bpf_probe_read_user(&dropped, sizeof(dropped), &batch->dropped) != 0) {
    if (lost) __sync_fetch_and_add(&lost->unreadable, 1);
    return 0;
  }
  if (dropped > 0) {
    struct dormant_gpu_dropped_event* event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
    if (event) {
      event->type = DORMANT_GPU_DROPPED;
      event->tgid = tgid;
      event->dropped = dropped;
      bpf_ringbuf_submit(event, 0);
    } else if (lost) {
      __sync_fetch_and_add(&lost->activities_lost, dropped);
    }
  }
  union scratch_event* scratch = scratch_event();
  if (!scratch) return 0;
  struct dormant_gpu_activity_event* event = &scratch->activity;
  struct dormant_gpu_record_rate* rate = record_rate(tgid);
  for (__u32 i = 0; i < DORMANT_CUPTI_BATCH_RECORDS; ++i) {
    if (i >= count) break;
    event->type = DORMANT_GPU_ACTIVITY;
    event->tgid = tgid;
    if (bpf_probe_read_user(&event->activity, sizeof(event->activity), &batch->records[i]) != 0) {
      if (lost) __sync_fetch_and_add(&lost->unreadable, 1);
      continue;
    }
    if (!within_rate(rate, &event->activity)) continue;
    long name_bytes = 1;  // with its NUL
    event->name[0] = 0;
    struct name_key name = {.tgid = tgid, .address = event->activity.name};
    int new_name = 0;
    if (name.address != 0) {
      name_bytes = bpf_probe_read_user_str(event->name, DORMANT_GPU_SHORT_NAME_BYTES + 1,
                                           (const void*)name.address);
      if (name_bytes > DORMANT_GPU_SHORT_NAME_BYTES) {  // a long one: sent once
        new_name = !bpf_map_lookup_elem(&names_sent, &name);
        name_bytes = new_name ? bpf_probe_read_user_str(event->name, sizeof(event->name),
                                                        (const void*)name.address)
                              : 0;
      }
      if (name_bytes <= 0) {
        event->name[0] = 0;
        name_bytes = 1;
      }
    }
    if (name_bytes > DORMANT_GPU_NAME_LEN) name_bytes = DORMANT_GPU_NAME_LEN;
    __u64 size = offsetof(struct dormant_gpu_activity_event, name) + name_bytes;
    if (bpf_ringbuf_output(&events, event, size, 0) != 0) {
      if (lost) __sync_fetch_and_add(&lost->activities_lost, 1);
    } else if (new_name && name_bytes > 1) {
      __u8 sent = 1;
      bpf_map_update_elem(&names_sent, &name, &sent, BPF_ANY);
    }
  }
  return 0;
}

#include "followed_children.h"

char LICENSE[] SEC("license") = "GPL";
