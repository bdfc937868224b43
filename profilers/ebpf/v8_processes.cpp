#include "profilers/ebpf/v8_processes.h"

#include <spdlog/spdlog.h>

#include "bpf/v8.h"
#include "profilers/ebpf/process_walks.h"

namespace dormant::profilers::ebpf {

nlohmann::json V8Counts::to_json() const {
  return {{"processes", processes},
          {"over_limit", over_limit},
          {"not_named", not_named},
          {"without_room", without_room},
          {"reasons", nlohmann::json(reasons)}};
}

V8Processes::V8Processes(int processes_fd, size_t max_processes)
    : processes_fd_(processes_fd), max_processes_(max_processes) {}

void V8Processes::add_process(pid_t pid, uint32_t generation,
                              const std::vector<system::Mapping>& mappings) {
  std::lock_guard lock(mutex_);
  auto known = images_.find(pid);
  if (known != images_.end() && known->second.first >= generation) return;
  auto found = binaries_.find(pid, mappings);
  if (found && !*found) return;
  if (!found) {
    ++counts_.not_named;
    give_reason(pid, found.error().message());
    return;
  }
  if (known == images_.end() && max_processes_ != 0 && images_.size() >= max_processes_) {
    ++counts_.over_limit;
    give_reason(pid, "past --max-processes-runtime-profiler: native frames only");
    return;
  }
  const system::V8Layout& layout = **found;
  dormant_v8_process walk{static_cast<int16_t>(layout.fp_function),
                          static_cast<int16_t>(layout.fp_context),
                          static_cast<uint16_t>(layout.heap_object_tag_mask),
                          static_cast<uint16_t>(layout.heap_object_tag)};
  std::optional<uint32_t> replaced;
  if (known != images_.end()) replaced = known->second.first;
  if (!put_process_walk(processes_fd_, pid, generation, walk, replaced)) {
    ++counts_.without_room;
    return;
  }
  if (!replaced) ++counts_.processes;
  images_[pid] = {generation, layout};
}

void V8Processes::forget_processes(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  for (pid_t pid : pids) {
    auto known = images_.find(pid);
    if (known == images_.end()) continue;
    remove_process_walk(processes_fd_, pid, known->second.first);
    images_.erase(known);
  }
}

std::optional<system::V8Layout> V8Processes::layout(pid_t pid, uint32_t generation) const {
  std::lock_guard lock(mutex_);
  auto known = images_.find(pid);
  if (known == images_.end() || known->second.first != generation) return std::nullopt;
  return known->second.second;
}

V8Counts V8Processes::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void V8Processes::give_reason(pid_t pid, const std::string& why) {
  spdlog::info("ebpf: no JavaScript names for process {}: {}", pid, why);
  counts_.reasons.push_back("pid " + std::to_string(pid) + ": " + why);
  if (counts_.reasons.size() > kMaxReasons) counts_.reasons.pop_front();
}

}  // namespace dormant::profilers::ebpf
