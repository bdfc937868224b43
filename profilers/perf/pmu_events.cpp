#include "profilers/perf/pmu_events.h"

#include <system_error>

namespace dormant::profilers::perf {

std::vector<std::string> pmu_events(const std::filesystem::path& devices) {
  struct Event {
    const char* name;
    const char* sysfs_name;
  };
  static constexpr Event kEvents[] = {{"cycles", "cpu-cycles"},
                                      {"instructions", "instructions"},
                                      {"cache-misses", "cache-misses"},
                                      {"cache-references", "cache-references"},
                                      {"branch-misses", "branch-misses"},
                                      {"branch-instructions", "branch-instructions"},
                                      {"stalled-cycles-frontend", "stalled-cycles-frontend"},
                                      {"stalled-cycles-backend", "stalled-cycles-backend"}};
  std::vector<std::string> found;
  for (const Event& event : kEvents) {
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

}  // namespace dormant::profilers::perf
