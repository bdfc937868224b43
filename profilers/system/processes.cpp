#include "profilers/system/processes.h"

#include "common/procfs.h"

namespace dormant::profilers::system {

Result<size_t> process_count() {
  auto pids = procfs::all_pids();
  if (!pids) return pids.error();
  return pids->size();
}

bool is_live_process(pid_t pid) {
  if (pid <= 0) return false;
  auto stat = procfs::process_stat(pid);
  return stat.ok() && stat->state != 'Z' && stat->state != 'X';
}

PidSplit split_live_pids(const std::vector<int>& pids) {
  PidSplit split;
  for (int pid : pids) (is_live_process(pid) ? split.live : split.gone).push_back(pid);
  return split;
}

Result<void> check_process_limit(std::string_view profiler, int limit) {
  if (limit <= 0) return ok();
  auto count = process_count();
  if (!count || *count <= static_cast<size_t>(limit)) return ok();
  return Error(ErrorKind::kUnavailable,
               std::string(profiler) + " skipped: the host runs " + std::to_string(*count) +
                   " processes, above --skip-system-profilers-above " + std::to_string(limit));
}

}  // namespace dormant::profilers::system
