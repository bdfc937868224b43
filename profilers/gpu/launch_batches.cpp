#include "profilers/gpu/launch_batches.h"

#include <cstring>

namespace dormant::profilers::gpu {

bool for_each_launch(const uint8_t* data, size_t bytes, uint32_t count,
                     const std::function<void(const dormant_cupti_launch&)>& on_launch) {
  constexpr size_t kHeader = offsetof(dormant_cupti_launch, frames);
  static thread_local dormant_cupti_launch launch;
  size_t at = 0;
  for (uint32_t taken = 0; taken < count; ++taken) {
    if (bytes - at < kHeader) return false;
    std::memcpy(&launch, data + at, kHeader);
    uint32_t depth = launch.depth == DORMANT_CUPTI_STACK_NOT_TAKEN ? 0 : launch.depth;
    if (depth > DORMANT_CUPTI_MAX_FRAMES || launch.python_depth > DORMANT_CUPTI_MAX_PYTHON_FRAMES) {
      return false;
    }
    size_t frames = depth * sizeof(launch.frames[0]);
    size_t python = launch.python_depth * sizeof(launch.python[0]);
    if (bytes - at - kHeader < frames + python) return false;
    std::memcpy(launch.frames, data + at + kHeader, frames);
    std::memcpy(launch.python, data + at + kHeader + frames, python);
    at += kHeader + frames + python;
    on_launch(launch);
  }
  return true;
}

}  // namespace dormant::profilers::gpu
