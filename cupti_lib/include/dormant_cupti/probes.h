// What libdormant_cupti.so hands to its USDT probes, read by the agent's BPF programs
// (bpf/gpu_probes.bpf.c) from the program's memory: fixed-width types only, no pointers but
// addresses as integers. Both probes are provider "dormant_cupti"; the library is attached while
// the semaphore of "launch" is non-zero, and dormant otherwise.
#ifndef DORMANT_CUPTI_PROBES_H
#define DORMANT_CUPTI_PROBES_H

#include <linux/types.h>

#define DORMANT_CUPTI_PROVIDER "dormant_cupti"
#define DORMANT_CUPTI_LAUNCH_PROBE "launch"
#define DORMANT_CUPTI_ACTIVITY_PROBE "activity"
#define DORMANT_CUPTI_LIBRARY_NAME "libdormant_cupti.so"

#define DORMANT_CUPTI_MAX_FRAMES 127
#define DORMANT_CUPTI_MAX_PYTHON_FRAMES 63
#define DORMANT_CUPTI_PYTHON_ENTRY 1ULL
#define DORMANT_CUPTI_BATCH_RECORDS 64
#define DORMANT_CUPTI_LAUNCH_BATCH_BYTES 16384
// The longest kernel name the activity probe passes on whole, without its NUL; a longer one comes
// cut, ending in '#' and 16 hex digits of a hash of the whole name.
#define DORMANT_CUPTI_MAX_NAME_BYTES 4095
#define DORMANT_CUPTI_STACK_NOT_TAKEN 0x80000000u

// One launch, as the library records it at the API's exit, in the launching thread.
struct dormant_cupti_launch {
  __u32 correlation_id;
  // A driver call inside a runtime launch whose correlation id differs (0: none, or the same).
  __u32 nested_correlation_id;
  __s32 cbid;  // the API: a runtime callback id, or minus a driver one
  // The frames that follow, or DORMANT_CUPTI_STACK_NOT_TAKEN: the thread was past its rate of
  // launches with stacks (the library's DORMANT_CUPTI_LAUNCH_RATE), no frames follow, and the
  // launch's work takes the stacks of the thread's taken launches of the same kernel.
  __u32 depth;
  __u32 tid;  // the launching thread
  __u32 python_depth;
  // Return addresses less one (inside the call), the launch site first; the frames of CUPTI, the
  // CUDA libraries and this library are left out.
  __u64 frames[DORMANT_CUPTI_MAX_FRAMES];
  // The launching thread's Python frames, where the program is CPython, innermost first: the
  // addresses of their code objects, DORMANT_CUPTI_PYTHON_ENTRY set on the first frame of each
  // evaluation loop (the last of that native frame's Python frames).
  __u64 python[DORMANT_CUPTI_MAX_PYTHON_FRAMES];
};

// Probe "launch", argument 1: the address of this. Launches wait in it and go to the probe
// together (its trap costs more than a launch): `count` of them one after another in `data`,
// each the header of a dormant_cupti_launch, its `depth` frames, then its `python_depth` Python
// frames.
struct dormant_cupti_launch_batch {
  __u32 count;
  __u32 bytes;  // of data in use
  __u8 data[DORMANT_CUPTI_LAUNCH_BATCH_BYTES];
};

enum dormant_cupti_activity_kind {
  DORMANT_CUPTI_KERNEL = 1,
  DORMANT_CUPTI_MEMCPY = 2,
  DORMANT_CUPTI_MEMSET = 3,
};

struct dormant_cupti_activity {
  __u64 start_ns;
  __u64 end_ns;
  // Kernels: the address of the (mangled) name, NUL-terminated, the same for each of a kernel's
  // records while the program runs; else 0.
  __u64 name;
  __u64 bytes;  // memcpy, memset
  __u32 correlation_id;
  __u32 kind;  // dormant_cupti_activity_kind
  __u32 device_id;
  __u32 stream_id;
  __u32 graph_id;
  __u32 copy_kind;  // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, ...)
};

// Probe "activity", argument 1: the address of this, on CUPTI's buffer thread.
struct dormant_cupti_batch {
  __u32 count;
  __u32 pad;
  __u64 dropped;  // records CUPTI dropped since the previous batch
  struct dormant_cupti_activity records[DORMANT_CUPTI_BATCH_RECORDS];
};

#endif
