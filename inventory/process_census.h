// Which container each process of the host is in, if any, and its name, from /proc/<pid>/cgroup
// and /proc/<pid>/comm (in a container) or /proc/<pid>/stat (outside: it also tells a kernel
// thread, which is not listed).
//
// Reading both files of every process costs tens of milliseconds on a host with thousands of
// them, every --inventory-interval. A census therefore remembers what it read: a process is read
// when it first appears, once more at the next census (it may have been caught between fork and
// exec, or before its runtime moved it into its container's cgroup) unless the first census found
// it, and after that at every kRereadEvery-th census, spread over the pids. A process that exits
// leaves the next census; a name changed by exec or prctl, or a pid reused within one interval,
// is seen within kRereadEvery censuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "inventory/container_cgroups.h"

namespace dormant::inventory {

struct InventoryProcess {
  pid_t pid = 0;
  std::string name;  // /proc/<pid>/comm, printable ASCII ('?' for any other byte)

  friend bool operator==(const InventoryProcess&, const InventoryProcess&) = default;
};

struct ContainerProcesses {
  ContainerCgroup cgroup;
  std::vector<InventoryProcess> processes;  // by pid
};

struct Census {
  std::vector<ContainerProcesses> containers;  // by cgroup
  // Outside containers, by pid: those seen at two censuses in a row (or at the first), in what
  // the containers leave of max_processes.
  std::vector<InventoryProcess> host_processes;
  size_t processes = 0;           // listed, in containers and outside
  size_t processes_left_out = 0;  // beyond max_processes
  size_t files_read = 0;          // cgroup, comm and stat files this census read
};

class ProcessCensus {
 public:
  static constexpr uint32_t kRereadEvery = 10;
  // What a census remembers at most; processes beyond are read every time.
  static constexpr size_t kMaxRemembered = 1 << 15;

  explicit ProcessCensus(std::filesystem::path proc_root) : proc_root_(std::move(proc_root)) {}

  // Lists at most `max_processes` processes, counting the rest. An error only when
  // the proc root cannot be listed; a process that exits meanwhile, or whose files cannot be
  // read, is skipped.
  Result<Census> take(size_t max_processes);

 private:
  struct Remembered {
    pid_t pid = 0;
    int32_t container = -1;  // in containers_; -1: in none
    bool confirmed = false;  // read at two censuses in a row at least
    bool kernel_thread = false;
    std::string name;
  };

  std::filesystem::path proc_root_;
  uint32_t censuses_ = 0;
  std::vector<Remembered> remembered_;  // by pid
  std::vector<ContainerCgroup> containers_;
};

}  // namespace dormant::inventory
