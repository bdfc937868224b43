#include "profilers/ebpf/python_processes.h"

#include <spdlog/spdlog.h>

#include "bpf/python.h"

namespace dormant::profilers::ebpf {
namespace {

dormant_python_process walk_of(const system::PythonOffsets& offsets, uint64_t runtime) {
  dormant_python_process walk{};
  walk.runtime = runtime;
  walk.runtime_interpreters_head = offsets.runtime_interpreters_head;
  walk.interpreter_threads_head = offsets.interpreter_threads_head;
  walk.thread_next = offsets.thread_next;
  walk.thread_pthread = offsets.thread_pthread;
  walk.thread_frame = offsets.thread_frame;
  walk.cframe_current_frame = offsets.cframe_current_frame;
  walk.frame_code = offsets.frame_code;
  walk.frame_previous = offsets.frame_previous;
  walk.frame_instruction = offsets.frame_instruction;
  walk.frame_is_entry = offsets.frame_is_entry;
  walk.frame_owner = offsets.frame_owner;
  walk.owned_by_c_stack = offsets.owned_by_c_stack;
  walk.every_frame_is_entry = offsets.every_frame_is_entry;
  return walk;
}

}  // namespace

nlohmann::json PythonCounts::to_json() const {
  return {{"processes", processes},
          {"over_limit", over_limit},
          {"unknown_versions", unknown_versions},
          {"without_room", without_room}};
}

PythonProcesses::PythonProcesses(int processes_fd, size_t max_processes)
    : walks_(processes_fd, max_processes) {}

void PythonProcesses::add_process(pid_t pid, uint32_t generation,
                                  const std::vector<system::Mapping>& mappings) {
  std::lock_guard lock(mutex_);
  if (!walks_.is_newer(pid, generation)) return;
  auto found = interpreters_.find(pid, mappings);
  if (!found) {
    ++counts_.unknown_versions;
    spdlog::info("ebpf: process {} runs {}", pid, found.error().message());
    return;
  }
  if (!*found) return;
  const system::PythonImage& image = **found;
  if (walks_.is_full(pid)) {
    ++counts_.over_limit;
    return;
  }
  bool added = false;
  if (!walks_.put(pid, generation, walk_of(image.offsets, image.runtime), image, &added)) {
    ++counts_.without_room;
    return;
  }
  if (added) ++counts_.processes;
}

void PythonProcesses::forget_processes(const std::vector<pid_t>& pids) {
  std::lock_guard lock(mutex_);
  walks_.forget(pids);
}

std::optional<system::PythonImage> PythonProcesses::image(pid_t pid, uint32_t generation) const {
  std::lock_guard lock(mutex_);
  const system::PythonImage* image = walks_.find(pid, generation);
  return image ? std::optional(*image) : std::nullopt;
}

PythonCounts PythonProcesses::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace dormant::profilers::ebpf
