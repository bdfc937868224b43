// The library's entry points: InitializeInjection (called by libcuda when CUDA_INJECTION64_PATH
// names this library), a constructor for LD_PRELOAD, and the CUPTI callback that turns each launch
// into a launch probe. Nothing here throws into CUPTI or the program.
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include <cupti.h>
#include <unistd.h>

#include "cupti_lib/src/attachment.h"
#include "cupti_lib/src/launch_batch.h"
#include "cupti_lib/src/launch_sampler.h"
#include "cupti_lib/src/launch_stacks.h"
#include "cupti_lib/src/probes.h"
#include "cupti_lib/src/quiet_log.h"

namespace dormant::cupti {
namespace {

struct ThreadLaunch {
  uint64_t epoch = 0;                  // of recording, that what follows was counted in
  int runtime_depth = 0;               // inside a runtime launch API
  uint32_t nested_correlation_id = 0;  // of the driver call inside it
  dormant_cupti_launch launch;
  LaunchSampler sampler{launch_rate(), reinterpret_cast<uintptr_t>(&launch) ^ uint64_t(gettid())};
};
thread_local ThreadLaunch t_launch;

std::mutex g_init_mutex;
bool g_initialized = false;

void emit_launch(int32_t cbid, uint32_t correlation_id, uint32_t nested_correlation_id) {
  dormant_cupti_launch& launch = t_launch.launch;
  launch.correlation_id = correlation_id;
  launch.nested_correlation_id =
      nested_correlation_id != correlation_id ? nested_correlation_id : 0;
  launch.cbid = cbid;
  if (launch.tid == 0) launch.tid = static_cast<uint32_t>(gettid());  // the thread's own record
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  if (t_launch.sampler.take(uint64_t(now.tv_sec) * 1'000'000'000 + uint64_t(now.tv_nsec))) {
    capture_launch_stack(launch);
  } else {
    launch.depth = DORMANT_CUPTI_STACK_NOT_TAKEN;
    launch.python_depth = 0;
  }
  add_launch(launch);
}

// Enabled only while recording (see attachment.h).
void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!recording() || quiet()) return;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  ThreadLaunch& thread = t_launch;
  if (uint64_t epoch = recording_epoch(); thread.epoch != epoch) {
    thread.epoch = epoch;  // an exit turned off with recording never came
    thread.runtime_depth = 0;
    thread.nested_correlation_id = 0;
  }
  bool enter = call->callbackSite == CUPTI_API_ENTER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (enter) {
      ++thread.runtime_depth;
      thread.nested_correlation_id = 0;
      return;
    }
    if (thread.runtime_depth > 0) --thread.runtime_depth;
    emit_launch(static_cast<int32_t>(cbid), call->correlationId, thread.nested_correlation_id);
    thread.nested_correlation_id = 0;
    return;
  }
  if (thread.runtime_depth > 0) {  // inside a runtime launch: that one is the launch
    if (!enter) thread.nested_correlation_id = call->correlationId;
    return;
  }
  if (!enter) emit_launch(-static_cast<int32_t>(cbid), call->correlationId, 0);
}

void at_exit() { stop_watching_for_exit(); }  // recording off, the subscription let go

int initialize() {
  std::lock_guard lock(g_init_mutex);
  if (g_initialized) return 1;
  if (quiet()) return 0;
  if (!start_watching(on_api)) {
    go_quiet();
    return 0;
  }
  g_initialized = true;
  std::atexit(at_exit);
  return 1;
}

// Preloaded (LD_PRELOAD), the library starts itself; loaded by libcuda, it waits to be called.
__attribute__((constructor)) void initialize_when_preloaded() {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr || std::strstr(preload, DORMANT_CUPTI_LIBRARY_NAME) == nullptr) return;
  try {
    (void)initialize();
  } catch (...) {
  }
}

}  // namespace
}  // namespace dormant::cupti

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return dormant::cupti::initialize();
  } catch (...) {
    return 0;
  }
}
