#include "profilers/ebpf/v8_processes.h"

#include <spdlog/spdlog.h>

#include "bpf/v8.h"

namespace dormant::profilers::ebpf {

nlohmann::json V8Counts::to_json() const {
  return {{"processes", processes},
          {"over_limit", over_limit},
          {"not_named", not_named},
          {"without_room", without_room},
          {"reasons", nlohmann::json(reasons.list())}};
}

V8Processes::V8Processes(int processes_fd, size_t max_processes)
    : walks_(processes_fd, max_processes) {}

void V8Processes::add_process(pid_t pid, uint32_t generation,
                              const std::vector<system::Mapping>& mappings) {
  std::lock_guard lock(mutex_);
  if (!walks_.is_newer(pid, generation)) return;
  auto found = binaries_.find(pid, mappings);
  if (found && !*found) return;
  if (!found) {
    ++counts_.not_named;
    give_reason(pid, found.error().message());
    return;
  }
  if (walks_.is_full(pid)) {
    ++counts_.over_limit;
    give_reason(pid, "past --max-processes-runtime-profiler: native frames only");
    return;
  }
  const system::V8Layout& layout = **found;
  dormant_v8_process walk{static_cast<int16_t>(layout.fp_function),
                          static_cast<int16_t>(layout.fp_context),
                          static_cast<uint16_t>(layout.heap_object_tag_mask),
                          static_cast<uint16_t>(layout.heap_object_tag)};
  bool added = false;
  if (!walks_.put(pid, generation, walk, layout, &added)) {
    ++counts_.without_room;
    return;
  }
  if (added) ++counts_.processes;
}

void V8Processes::forget_processes(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  walks_.forget(pids);
}

std::optional<system::V8Layout> V8Processes::layout(pid_t pid, uint32_t generation) const {
  std::lock_guard lock(mutex_);
  const system::V8Layout* layout = walks_.find(pid, generation);
  return layout ? std::optional(*layout) : std::nullopt;
}

V8Counts V8Processes::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void V8Processes::give_reason(pid_t pid, const std::string& why) {
  spdlog::info("ebpf: no JavaScript names for process {}: {}", pid, why);
  counts_.reasons.add(pid, why);
}

}  // namespace dormant::profilers::ebpf
