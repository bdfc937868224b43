// The ABI of the sampler's Python walk, between cpu_sampler.bpf.c and profilers/ebpf: where a
// CPython process keeps its runtime state and the offsets of the structures walked from there to
// the sampled thread's frames (profilers/system/python_runtime.h holds them per version).
#ifndef DORMANT_BPF_PYTHON_H
#define DORMANT_BPF_PYTHON_H

#include <linux/types.h>

struct dormant_python_process {
  __u64 runtime;  // the address of _PyRuntime in the process
  __u16 runtime_interpreters_head;
  __u16 interpreter_threads_head;
  __u16 thread_next;
  __u16 thread_pthread;  // pthread_self() of the thread: its fs base on x86_64
  __u16 thread_frame;
  __s16 cframe_current_frame;  // -1: thread_frame leads to the frame itself
  __u16 frame_code;
  __u16 frame_previous;
  __u16 frame_instruction;
  __s16 frame_is_entry;  // -1: none
  __s16 frame_owner;     // -1: none
  __u8 owned_by_c_stack;
  __u8 every_frame_is_entry;  // before 3.11: each Python frame has an evaluation loop of its own
  __u8 pad[4];
};

// A Python stack is a dormant_stack of pairs, innermost first: the code object, its lowest bit
// set on the frame an evaluation loop was entered with (the last of that native frame's Python
// frames), then the frame's instruction pointer.
#define DORMANT_MAX_PYTHON_FRAMES 63
#define DORMANT_PYTHON_ENTRY 1ULL
#define DORMANT_MAX_PYTHON_THREADS 64  // threads searched for the sampled one's state

// A code object the walk met for the first time in a process image: announced so that user space
// names it while the process lives.
struct dormant_python_code {
  __u32 tgid;
  __u32 generation;
  __u64 code;
};

#endif
