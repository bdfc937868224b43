#include "profilers/ebpf/hotspot_processes.h"

#include <spdlog/spdlog.h>

#include "bpf/hotspot.h"

namespace dormant::profilers::ebpf {
namespace {

// What the sampler's walk needs of a JVM; nullopt where an offset does not fit its fields.
std::optional<dormant_hotspot_process> walk_of(const system::HotSpotVm& vm) {
  const system::HotSpotOffsets& at = vm.offsets;
  dormant_hotspot_process walk{};
  for (size_t i = 0; i < vm.heaps.size() && i < DORMANT_HOTSPOT_MAX_HEAPS; ++i) {
    walk.heaps[i] = {vm.heaps[i].low, vm.heaps[i].high, vm.heaps[i].segment_map};
  }
  walk.heap_count =
      static_cast<uint32_t>(std::min<size_t>(vm.heaps.size(), DORMANT_HOTSPOT_MAX_HEAPS));
  walk.segment_shift = vm.segment_shift;
  walk.code_low = vm.code_low;
  walk.code_high = vm.code_high;
  walk.interpreter_low = vm.interpreter_low;
  walk.interpreter_high = vm.interpreter_high;
  const uint64_t offsets[] = {at.heap_block_size,     at.blob_name,       at.blob_frame_size,
                              at.blob_frame_complete, at.blob_code_begin, at.nmethod_method,
                              at.nmethod_comp_level};
  for (uint64_t offset : offsets) {
    if (offset > UINT16_MAX) return std::nullopt;
  }
  walk.heap_block_size = static_cast<uint16_t>(at.heap_block_size);
  walk.blob_name = static_cast<uint16_t>(at.blob_name);
  walk.blob_frame_size = static_cast<uint16_t>(at.blob_frame_size);
  walk.blob_frame_complete = static_cast<uint16_t>(at.blob_frame_complete);
  walk.blob_code_begin = static_cast<uint16_t>(at.blob_code_begin);
  walk.nmethod_method = static_cast<uint16_t>(at.nmethod_method);
  walk.nmethod_comp_level = static_cast<uint16_t>(at.nmethod_comp_level);
  return walk;
}

}  // namespace

nlohmann::json HotSpotCounts::to_json() const {
  return {{"processes", processes},   {"over_limit", over_limit},
          {"not_walked", not_walked}, {"without_room", without_room},
          {"waiting", waiting},       {"reasons", nlohmann::json(reasons.list())}};
}

HotSpotProcesses::HotSpotProcesses(int processes_fd, size_t max_processes)
    : walks_(processes_fd, max_processes) {}

void HotSpotProcesses::add_process(pid_t pid, uint32_t generation,
                                   const std::vector<system::Mapping>& mappings) {
  std::lock_guard lock(mutex_);
  add_locked(pid, generation, mappings);
}

void HotSpotProcesses::add_locked(pid_t pid, uint32_t generation,
                                  const std::vector<system::Mapping>& mappings) {
  if (!walks_.is_newer(pid, generation)) return;
  auto waiting = waiting_.find(pid);
  if (waiting != waiting_.end() && waiting->second.generation > generation) return;
  auto found = jvms_.find(pid, mappings);
  if (found && !*found) return;
  if (!found && found.error().kind() == ErrorKind::kConflict) {  // not started yet
    waiting_[pid] = {generation, mappings};
    counts_.waiting = waiting_.size();
    return;
  }
  if (waiting != waiting_.end()) waiting_.erase(waiting);
  counts_.waiting = waiting_.size();
  if (!found) {
    ++counts_.not_walked;
    give_reason(pid, found.error().message());
    return;
  }
  if (walks_.is_full(pid)) {
    ++counts_.over_limit;
    give_reason(pid, "past --max-processes-runtime-profiler: native frames only");
    return;
  }
  auto walk = walk_of(**found);
  if (!walk) {
    ++counts_.not_walked;
    give_reason(pid, "a HotSpot whose structures are laid out past what the sampler reads");
    return;
  }
  bool added = false;
  if (!walks_.put(pid, generation, *walk,
                  std::make_shared<const system::HotSpotVm>(std::move(**found)), &added)) {
    ++counts_.without_room;
    return;
  }
  if (added) ++counts_.processes;
}

void HotSpotProcesses::retry_waiting() {
  std::lock_guard lock(mutex_);
  std::map<pid_t, Waiting> waiting;
  waiting.swap(waiting_);
  for (auto& [pid, image] : waiting) add_locked(pid, image.generation, image.mappings);
  counts_.waiting = waiting_.size();
}

void HotSpotProcesses::forget_processes(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  for (pid_t pid : pids) waiting_.erase(pid);
  walks_.forget(pids);
  counts_.waiting = waiting_.size();
}

std::shared_ptr<const system::HotSpotVm> HotSpotProcesses::vm(pid_t pid,
                                                              uint32_t generation) const {
  std::lock_guard lock(mutex_);
  const auto* vm = walks_.find(pid, generation);
  return vm ? *vm : nullptr;
}

HotSpotCounts HotSpotProcesses::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void HotSpotProcesses::give_reason(pid_t pid, const std::string& why) {
  spdlog::info("ebpf: no Java frames for process {}: {}", pid, why);
  counts_.reasons.add(pid, why);
}

}  // namespace dormant::profilers::ebpf
