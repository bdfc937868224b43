// What the guard rails and the pid filter need to know about the host's processes.
#pragma once

#include <string_view>
#include <vector>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::profilers::system {

// How many processes the host runs now.
Result<size_t> process_count();

// The --skip-system-profilers-above guard rail: an unavailable error ("perf skipped: the host runs
// N processes, ...") when the host runs more than `limit` processes (0: no limit).
Result<void> check_process_limit(std::string_view profiler, int limit);

// Whether `pid` names a running process (a zombie does not count).
bool is_live_process(pid_t pid);

// `pids` split into the live ones and the others, order kept.
struct PidSplit {
  std::vector<int> live;
  std::vector<int> gone;
};
PidSplit split_live_pids(const std::vector<int>& pids);

}  // namespace dormant::profilers::system
