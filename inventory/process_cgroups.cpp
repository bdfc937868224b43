#include "inventory/process_cgroups.h"

#include <utility>
#include <vector>

#include "common/atomic_file.h"
#include "common/text.h"

namespace dormant::inventory {

Result<ProcessCgroups> parse_process_cgroups(std::string_view text) {
  ProcessCgroups cgroups;
  for (std::string_view line : split(text, '\n')) {
    if (line.empty()) continue;
    // "HIERARCHY-ID:CONTROLLERS:PATH"; the path itself may hold ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return Error::parse("cgroup membership line is not 'ID:CONTROLLERS:PATH': '" +
                          std::string(line) + "'");
    }
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (controllers.empty()) {
      if (id == "0") cgroups.unified = path;
      continue;
    }
    for (std::string_view controller : split(controllers, ',')) {
      cgroups.v1.insert_or_assign(std::string(controller), path);
    }
  }
  return cgroups;
}

Result<ProcessCgroups> read_process_cgroups(pid_t pid) {
  std::string file = pid == 0 ? "/proc/self/cgroup" : "/proc/" + std::to_string(pid) + "/cgroup";
  auto text = read_file(file);
  if (!text) return text.error();
  auto cgroups = parse_process_cgroups(*text);
  if (!cgroups) return std::move(cgroups).take_error().with_context(file);
  return cgroups;
}

}  // namespace dormant::inventory
