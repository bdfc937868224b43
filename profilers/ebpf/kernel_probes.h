// What the running kernel's BPF verifier accepts, asked of the kernel itself rather than read from
// its version: distributions backport, and a version says nothing of a kernel built otherwise.
#pragma once

#include "common/result.h"

namespace dormant::profilers::ebpf {

// Whether a perf_event program may use a hash map that allocates its elements as it fills
// (BPF_F_NO_PREALLOC); the verifier accepts it from 6.1. Loads a three-instruction program that
// refers to such a map; the kernel's answer is kept for the life of the process. An error when
// the probe itself cannot run (no memory, no permission: it needs CAP_BPF and CAP_PERFMON), which
// is not kept, so that the next session asks again.
Result<bool> perf_event_programs_accept_unallocated_maps();

}  // namespace dormant::profilers::ebpf
