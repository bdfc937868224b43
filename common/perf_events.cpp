#include "common/perf_events.h"

#include <system_error>

namespace dormant {

std::vector<std::string> pmu_events(const std::filesystem::path& devices) {
  std::vector<std::string> found;
  for (const PerfEvent& event : kPerfEvents) {
    std::error_code error;
    for (const auto& device : std::filesystem::directory_iterator(devices, error)) {
      std::error_code missing;
      if (std::filesystem::exists(device.path() / "events" / event.sysfs_name, missing)) {
        found.emplace_back(event.name);
        break;
      }
    }
  }
  return found;
}

}  // namespace dormant
