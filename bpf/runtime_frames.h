// How a runtime's frame (a JVM's Java frame, V8's JavaScript function) is recorded in a user
// stack, between cpu_sampler.bpf.c and profilers/ebpf: two words. The first is the frame's code
// address with DORMANT_RUNTIME_FRAME set, its kind above DORMANT_RUNTIME_KIND_SHIFT and, for a
// compiled Java method, its compilation level (1-3 C1, 4 C2) above DORMANT_RUNTIME_LEVEL_SHIFT.
// The second names it: the Method* of an interpreted or compiled Java frame, the CodeBlob of a
// JVM stub's, the JSFunction of a JavaScript frame.
#ifndef DORMANT_BPF_RUNTIME_FRAMES_H
#define DORMANT_BPF_RUNTIME_FRAMES_H

#include <linux/types.h>

#define DORMANT_RUNTIME_FRAME (1ULL << 63)
#define DORMANT_RUNTIME_KIND_SHIFT 60
#define DORMANT_RUNTIME_LEVEL_SHIFT 56
#define DORMANT_RUNTIME_ADDRESS_MASK ((1ULL << DORMANT_RUNTIME_LEVEL_SHIFT) - 1)

enum dormant_runtime_frame_kind {
  DORMANT_JAVA_INTERPRETED = 1,
  DORMANT_JAVA_COMPILED = 2,
  DORMANT_JAVA_STUB = 3,
  DORMANT_V8_FUNCTION = 4,
};

// A runtime frame the walk met for the first time in a process image: announced so that user
// space names it while the process lives, from what the runtime holds there now.
struct dormant_runtime_frame {
  __u32 tgid;
  __u32 generation;
  __u64 marked;
  __u64 word;
};

#endif
