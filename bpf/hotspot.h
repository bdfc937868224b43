// The ABI of the sampler's walk through a HotSpot JVM's Java frames, between cpu_sampler.bpf.c
// and profilers/ebpf: where the JVM's code cache and interpreter are and the offsets of what is
// read there (profilers/system/hotspot_vm.h reads them from the JVM's own tables). Its frames are
// recorded as runtime_frames.h says. x86_64 only.
#ifndef DORMANT_BPF_HOTSPOT_H
#define DORMANT_BPF_HOTSPOT_H

#include <linux/types.h>

#define DORMANT_HOTSPOT_MAX_HEAPS 4

struct dormant_hotspot_heap {
  __u64 low;
  __u64 high;
  __u64 segment_map;  // a byte per segment: 0xff free, 0 a block's start, else segments back
};

struct dormant_hotspot_process {
  struct dormant_hotspot_heap heaps[DORMANT_HOTSPOT_MAX_HEAPS];
  __u64 code_low;  // the whole code cache: where every Java frame returns to
  __u64 code_high;
  __u64 interpreter_low;
  __u64 interpreter_high;
  __u32 heap_count;
  __u32 segment_shift;
  __u16 heap_block_size;  // a block's header, before its CodeBlob
  __u16 blob_name;
  __u16 blob_frame_size;
  __u16 blob_frame_complete;
  __u16 blob_code_begin;
  __u16 nmethod_method;
  __u16 nmethod_comp_level;
  __u16 pad;
};

// An interpreted frame, from its frame pointer, in words (x86_64, JDK 9+): the sender's sp, the
// Method* it runs.
#define DORMANT_INTERPRETER_SENDER_SP (-1)
#define DORMANT_INTERPRETER_METHOD (-3)

#endif
