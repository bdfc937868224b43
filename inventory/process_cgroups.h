// The cgroups one process belongs to, as /proc/PID/cgroup lists them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace dormant::inventory {

struct ProcessCgroups {
  std::optional<std::string> unified;  // the path on the "0::" line
  // v1: each controller ("cpu", "memory", "name=systemd"…) → the path in its hierarchy.
  std::map<std::string, std::string, std::less<>> v1;
};

Result<ProcessCgroups> parse_process_cgroups(std::string_view text);
Result<ProcessCgroups> read_process_cgroups(pid_t pid = 0);  // 0 = this process

}  // namespace dormant::inventory
