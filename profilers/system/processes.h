// What the guard rails and the pid filter need to know about the host's processes.
#pragma once

#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

// How many processes the host runs now.
Result<size_t> process_count();

// Whether `pid` names a running process (a zombie does not count).
bool is_live_process(pid_t pid);

// `pids` split into the live ones and the others, order kept.
struct PidSplit {
  std::vector<int> live;
  std::vector<int> gone;
};
PidSplit split_live_pids(const std::vector<int>& pids);

}  // namespace dormant::profilers::system
