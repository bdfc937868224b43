// The pid filter the eBPF sampler and the GPU probes share (bpf/followed_pids.h): the processes
// named, and, following, those they start, added and taken out by the two programs of
// bpf/followed_children.h. Each BPF object has its own map and programs: these take them.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <bpf/libbpf.h>

#include "common/result.h"

namespace dormant::profilers::ebpf {

struct PidFilter {
  ::bpf_map* target_pids;
  ::bpf_program* follow_child;
  ::bpf_program* forget_child;
};

// Before the object is loaded: room for `named` processes and, following, those they start; the
// following programs loaded only when they are used.
void size_pid_filter(const PidFilter& filter, size_t named, bool follow);

// Once it is loaded: the named processes in the filter and, following, the following programs
// attached, their links returned (the caller owns them). `whose`: "the GPU probes'", for errors.
Result<std::vector<::bpf_link*>> fill_pid_filter(const PidFilter& filter,
                                                 const std::vector<int>& pids, bool follow,
                                                 std::string_view whose);

}  // namespace dormant::profilers::ebpf
