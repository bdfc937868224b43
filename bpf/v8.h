// The ABI of the sampler's look at V8's JavaScript frames (node), between cpu_sampler.bpf.c and
// profilers/ebpf: where a frame keeps its context and its function, from the frame pointer, and
// how a heap object's pointer is tagged (profilers/system/v8_runtime.h reads them from the
// binary's v8dbg_* constants). V8 keeps frame pointers: the walk steps through its frames by
// them, and names a frame JavaScript's where those two slots hold heap objects.
#ifndef DORMANT_BPF_V8_H
#define DORMANT_BPF_V8_H

#include <linux/types.h>

struct dormant_v8_process {
  __s16 function_offset;  // bytes from the frame pointer
  __s16 context_offset;
  __u16 heap_object_tag_mask;
  __u16 heap_object_tag;
};

#endif
