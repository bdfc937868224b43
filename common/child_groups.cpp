#include "common/child_groups.h"

#include <algorithm>

#include <signal.h>

namespace dormant {
void signal_group(pid_t leader, int sig) {
  if (::kill(-leader, sig) != 0) ::kill(leader, sig);
}

void ChildGroups::add(pid_t leader) {
  std::lock_guard lock(mutex_);
  leaders_.push_back(leader);
  if (killing_) signal_group(leader, SIGKILL);
}

void ChildGroups::remove(pid_t leader) {
  std::lock_guard lock(mutex_);
  std::erase(leaders_, leader);
}

int ChildGroups::kill_all() {
  std::lock_guard lock(mutex_);
  killing_ = true;
  for (pid_t leader : leaders_) signal_group(leader, SIGKILL);
  return static_cast<int>(leaders_.size());
}

size_t ChildGroups::size() const {
  std::lock_guard lock(mutex_);
  return leaders_.size();
}

}  // namespace dormant
