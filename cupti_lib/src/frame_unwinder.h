// A fast x86-64 unwinder for the launch stacks: the .eh_frame rules of each return address are
// worked out once (with libgcc's FDE lookup) and kept in a per-thread cache, so that a launch's
// stack costs a table look-up and two loads a frame. libgcc's own unwinder interprets the rules
// again at every frame of every launch, a few microseconds per launch through libcuda's frames.
// Frames whose rules go beyond "CFA = rsp or rbp + n; return address and rbp saved at CFA + n"
// (DWARF expressions, signal frames) are left to libgcc: unwind() then says it could not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dormant::cupti {

// The caller's stack, innermost frame first: return addresses less one (inside the call). Every
// read stays within the thread's stack. Returns how many it wrote, or -1 if a frame needs
// libgcc's unwinder (`frames` holds nothing useful then).
int unwind_caller_stack(uint64_t* frames, int capacity);

}  // namespace dormant::cupti
