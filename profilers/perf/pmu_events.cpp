#include "profilers/perf/pmu_events.h"

#include <algorithm>
#include <system_error>

#include "common/perf_events.h"
#include "common/text.h"

namespace dormant::profilers::perf {

Result<std::vector<std::string>> events_to_try(const std::vector<std::string>& requested,
                                               const std::vector<std::string>& available) {
  std::vector<std::string> events;
  for (const std::string& event : requested) {
    if (std::ranges::find(available, event) != available.end()) events.push_back(event);
  }
  if (std::ranges::find(requested, "cycles") != requested.end()) {
    events.emplace_back(kSoftwareCpuEvent);
  }
  if (!events.empty()) return events;
  return Error(ErrorKind::kUnavailable,
               "perf cannot count " + join(requested, ", ") + " on this host: its PMUs offer " +
                   (available.empty() ? "no hardware event (a virtual machine, say)"
                                      : join(available, ", ")) +
                   "; ask for cycles, which falls back to cpu-clock");
}

bool known_event_applies(const std::string& known, const std::vector<std::string>& events) {
  if (known.empty() || events.empty()) return false;
  if (events.front() == known) return true;
  return known == kSoftwareCpuEvent && events.size() == 2 && events[0] == "cycles" &&
         events[1] == known;
}

}  // namespace dormant::profilers::perf
