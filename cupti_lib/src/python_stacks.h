// The launching thread's Python frames, where the program is CPython 3.9 to 3.13: its code
// objects, read in the thread itself from its own frame chain with the layout of the
// interpreter's version (profilers/system/python_layouts.h), as the eBPF sampler reads them from
// outside. The thread need not hold the GIL (PyTorch releases it around its CUDA calls): no other
// thread changes a thread's frame chain, and every frame on it lives while the thread is in the
// launch. A debug build of CPython, or a version without a layout, gets no Python frames.
#pragma once

#include <linux/types.h>

namespace dormant::cupti {

// Looks for CPython among the program's exported symbols, once; later calls do nothing.
void find_python();

// The calling thread's Python frames into `codes`, as probes.h's `python` holds them; how many.
int capture_python_stack(__u64* codes, int capacity);

}  // namespace dormant::cupti
