// The launching thread's stack, unwound in the thread itself by the .eh_frame tables (libgcc's
// unwinder), so that the frames of CUPTI and the CUDA libraries, built without frame pointers,
// are crossed like any other. Those frames, and this library's, are left out: the stack begins
// at the program's own call. A CPython program's launches carry the thread's Python frames too
// (python_stacks.h).
#pragma once

#include "dormant_cupti/probes.h"

namespace dormant::cupti {

// Finds where the code of CUPTI, libcuda, libcudart and this library is mapped, and CPython if
// the program runs it. Call once before the first capture; later calls do nothing.
void find_cuda_library_code();

// Fills `launch.frames`, `launch.depth`, `launch.python` and `launch.python_depth`.
void capture_launch_stack(dormant_cupti_launch& launch);

}  // namespace dormant::cupti
