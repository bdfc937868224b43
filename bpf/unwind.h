// The ABI of the sampler's unwind tables, between cpu_sampler.bpf.c and profilers/ebpf: how to
// step from one frame to its caller at any address of a file, from the file's call-frame
// information (.eh_frame, .debug_frame). x86_64 only; elsewhere the walk uses frame pointers.
#ifndef DORMANT_BPF_UNWIND_H
#define DORMANT_BPF_UNWIND_H

#include <linux/types.h>

// How to find the caller's stack pointer (the canonical frame address, CFA) at an address.
enum dormant_cfa_kind {
  DORMANT_CFA_NONE = 0,    // no call-frame information here: step by frame pointer
  DORMANT_CFA_SP = 1,      // CFA = sp + offset
  DORMANT_CFA_FP = 2,      // CFA = fp + offset
  DORMANT_CFA_PLT = 3,     // a PLT stub: CFA = sp + offset, + 8 from its push on (ip & 15 >= K)
  DORMANT_CFA_SIGNAL = 4,  // the signal trampoline: the interrupted registers are at sp (ucontext)
  DORMANT_CFA_END = 5,     // the outermost frame (_start, a thread's start): the stack ends here
};

// Where the caller's frame pointer is.
enum dormant_fp_kind {
  DORMANT_FP_SAME = 0,    // unchanged
  DORMANT_FP_AT_CFA = 1,  // saved at CFA + offset
  DORMANT_FP_LOST = 2,    // not recoverable: the caller's frames need a table of their own
};

// One row holds from its `pc` to the next row's. Offsets are in units of 8 bytes: every offset
// x86_64 code uses is a multiple of 8, and one that is not gets DORMANT_CFA_NONE.
struct dormant_unwind_row {
  __u32 pc;          // the address in the file, less the file's lowest load address
  __u16 cfa_offset;  // / 8
  __s8 fp_offset;    // / 8, from the CFA; for DORMANT_CFA_PLT, the stub offset K
  __u8 kinds;        // cfa kind | fp kind << 4
};

#define DORMANT_UNWIND_ROW_KINDS(cfa, fp) ((__u8)((cfa) | ((fp) << 4)))
#define DORMANT_UNWIND_CFA_KIND(kinds) ((kinds)&0xf)
#define DORMANT_UNWIND_FP_KIND(kinds) ((kinds) >> 4)

// A file's rows are one array map (an inner map of unwind_files, under the file's id): row 0
// holds in its pc how many rows follow it, by pc. A search takes at most this many steps.
#define DORMANT_UNWIND_SEARCH_STEPS 24
#define DORMANT_UNWIND_MAX_ROWS (1U << DORMANT_UNWIND_SEARCH_STEPS)

// An executable mapping of a process: address - bias is the pc of the file's rows.
struct dormant_unwind_mapping {
  __u64 start;
  __u64 end;
  __u64 bias;
  __u32 file;  // the file's id in unwind_files; 0: none (anonymous or JIT code, unreadable file)
  __u32 pad;
};

// A process image, as the sampler numbers them (dormant_sample_key).
struct dormant_unwind_process_key {
  __u32 tgid;
  __u32 generation;
};

// A process's executable mappings, by start address.
#define DORMANT_UNWIND_MAX_MAPPINGS 256
#define DORMANT_UNWIND_MAPPING_STEPS 8  // log2 of the above
struct dormant_unwind_process {
  __u32 count;
  __u32 pad;
  struct dormant_unwind_mapping mappings[DORMANT_UNWIND_MAX_MAPPINGS];
};

// Per CPU: how the walks went, summed by user space.
struct dormant_unwind_counts {
  __u64 frames_by_table;  // caller frames found by a row of a table
  __u64 frames_by_fp;     // caller frames found by frame pointer (no row for that address)
  __u64 frames_by_java;   // caller frames of Java frames (hotspot.h)
  __u64 no_process;       // walks of processes whose mappings were not loaded (yet)
  __u64 no_table;         // steps from a file whose table is not loaded (not yet, or no room)
  __u64 complete;         // walks that reached the outermost frame
};

// x86_64: where a signal handler's trampoline finds the interrupted registers, from its sp
// (struct ucontext: uc_flags, uc_link, uc_stack, then uc_mcontext's gregs).
#define DORMANT_UCONTEXT_RBP 120
#define DORMANT_UCONTEXT_RSP 160
#define DORMANT_UCONTEXT_RIP 168

#endif
