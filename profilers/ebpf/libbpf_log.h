// libbpf's messages, where a user can see them: captured while a BPF object is opened or loaded
// (the kernel verifier's log among them) and put into the error when that fails; at other times
// sent to the debug log.
#pragma once

#include <functional>
#include <string_view>

#include "common/result.h"

namespace dormant::profilers::ebpf {

// Runs `step`, which returns 0 or a negative errno as libbpf does, with libbpf's messages on
// this thread captured. On failure: "cannot WHAT: STRERROR; libbpf said:\nLAST LINES", of kind
// kUnavailable for EPERM (privileges, locked memory) and kBpf otherwise.
Result<void> with_libbpf_log(std::string_view what, const std::function<int()>& step);

}  // namespace dormant::profilers::ebpf
