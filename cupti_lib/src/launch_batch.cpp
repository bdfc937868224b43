#include "cupti_lib/src/launch_batch.h"

#include <cstddef>
#include <cstring>
#include <mutex>

#include "cupti_lib/src/attachment.h"
#include "cupti_lib/src/probes.h"

namespace dormant::cupti {
namespace {

constexpr size_t kHeaderBytes = offsetof(dormant_cupti_launch, frames);
constexpr size_t kDeepestLaunch = sizeof(dormant_cupti_launch);

std::mutex g_mutex;
dormant_cupti_launch_batch g_batch;  // under g_mutex
int g_full_batches = 0;              // under g_mutex: since the last hand_over_soon()

void hand_over_locked() {
  if (g_batch.count == 0) return;
  fire_launch_probe(&g_batch);
  g_batch.count = 0;
  g_batch.bytes = 0;
}

}  // namespace

void add_launch(const dormant_cupti_launch& launch) {
  uint32_t depth = launch.depth == DORMANT_CUPTI_STACK_NOT_TAKEN ? 0 : launch.depth;
  size_t native = kHeaderBytes + depth * sizeof(launch.frames[0]);
  size_t python = launch.python_depth * sizeof(launch.python[0]);
  std::lock_guard lock(g_mutex);
  std::memcpy(g_batch.data + g_batch.bytes, &launch, native);
  std::memcpy(g_batch.data + g_batch.bytes + native, launch.python, python);
  g_batch.bytes += static_cast<uint32_t>(native + python);
  ++g_batch.count;
  if (sizeof(g_batch.data) - g_batch.bytes < kDeepestLaunch) {
    hand_over_locked();
    if (++g_full_batches == kBatchesPerFlush) {
      g_full_batches = 0;
      hand_over_soon();
    }
  }
}

void hand_over_launches() {
  std::lock_guard lock(g_mutex);
  hand_over_locked();
}

}  // namespace dormant::cupti
