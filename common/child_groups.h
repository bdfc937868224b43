// The process groups that one component's children lead, so that another thread can kill them
// all at once (a profiler's abort() while its stop() hangs) whatever the owner is doing with them:
// spawning, reading, waiting or reaping.
//
// A Subprocess spawned with SpawnOptions::groups adds its group here and removes it before the
// leader is reaped; a group id stays reserved while its leader is unreaped, so kill_all() never
// signals a group that a reused id now names.
#pragma once

#include <mutex>
#include <vector>

#include <sys/types.h>

namespace dormant {

// SIGKILL (or `sig`) to the group `leader` leads, or to the leader alone if it has none yet.
void signal_group(pid_t leader, int sig);

class ChildGroups {
 public:
  void add(pid_t leader);
  void remove(pid_t leader);

  // SIGKILL to every group; groups added later are killed as they are added. Returns how many
  // groups it signalled.
  int kill_all();

  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<pid_t> leaders_;
  bool killing_ = false;
};

}  // namespace dormant
