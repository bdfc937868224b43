#include "cupti_lib/src/attachment.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dormant_cupti/launch_apis.h"

#include "cupti_lib/src/activity_buffers.h"
#include "cupti_lib/src/cupti_api.h"
#include "cupti_lib/src/launch_batch.h"
#include "cupti_lib/src/launch_stacks.h"
#include "cupti_lib/src/probes.h"
#include "cupti_lib/src/quiet_log.h"

namespace dormant::cupti {
namespace {

constexpr CUpti_ActivityKind kRecorded[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                            CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

std::mutex g_mutex;
std::condition_variable g_wake;
std::atomic<bool> g_recording{false};
std::atomic<uint64_t> g_epoch{0};
bool g_exiting = false;
bool g_hand_over_soon = false;
std::thread g_watcher;
CUpti_CallbackFunc g_on_api = nullptr;
CUpti_SubscriberHandle g_subscriber = nullptr;  // while recording

// The launch APIs this CUPTI knows: a CUDA 12 one refuses the ids CUDA 13 added.
bool enable_launch_callbacks(bool enable) {
  for (const LaunchApi& api : kLaunchApis) {
    auto domain = api.cbid > 0 ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    auto id = static_cast<CUpti_CallbackId>(api.cbid > 0 ? api.cbid : -api.cbid);
    CUptiResult result = cupti().enable_callback(enable ? 1 : 0, g_subscriber, domain, id);
    if (result != CUPTI_ERROR_INVALID_PARAMETER && !cupti_ok(result, "cuptiEnableCallback")) {
      return false;
    }
  }
  return true;
}

// With g_mutex held. Launches and records not handed over yet go to the agent if it is still
// attached; the buffers are freed.
void turn_off_locked() {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  g_recording.store(false, std::memory_order_release);
  (void)enable_launch_callbacks(false);
  hand_over_launches();
  for (CUpti_ActivityKind kind : kRecorded) (void)cupti().activity_disable(kind);
  (void)cupti_ok(cupti().activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                 "cuptiActivityFlushAll");
  hand_over_dropped();
  set_buffers_wanted(false);
  (void)cupti_ok(cupti().unsubscribe(g_subscriber), "cuptiUnsubscribe");
  g_subscriber = nullptr;
}

// With g_mutex held: subscribes under our name where this CUPTI can (CUDA 13), so that another
// tool can tell who holds it, and says who does when it is not us.
CUptiResult subscribe_named_locked() {
  static char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
  other[0] = '\0';
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "Dormant";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof(other);
  CUptiResult result = cupti().subscribe_v2 != nullptr
                           ? cupti().subscribe_v2(&g_subscriber, g_on_api, nullptr, &params)
                           : cupti().subscribe(&g_subscriber, g_on_api, nullptr);
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && other[0] != '\0') {
    static char said[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 96];  // log_once keeps the pointer
    other[sizeof(other) - 1] = '\0';
    std::snprintf(said, sizeof(said),
                  "another CUPTI client (%s) has this process: GPU recording waits until it "
                  "lets go",
                  other);
    log_once(said);
  } else if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    log_once(
        "another CUPTI client (Nsight, torch.profiler) has this process: GPU recording "
        "waits until it lets go");
  }
  return result;
}

// With g_mutex held; CUPTI is loaded the first time. False while another client has CUPTI (tried
// again at the next look), or on an error (the library goes quiet).
bool subscribe_locked() {
  if (!load_cupti()) {
    go_quiet();
    return false;
  }
  CUptiResult result = subscribe_named_locked();
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    g_subscriber = nullptr;
    return false;
  }
  if (cupti_ok(result, "cuptiSubscribe") &&
      cupti_ok(cupti().activity_register_callbacks(request_buffer, complete_buffer),
               "cuptiActivityRegisterCallbacks")) {
    return true;
  }
  go_quiet();
  if (result == CUPTI_SUCCESS) (void)cupti().unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  return false;
}

// With g_mutex held.
void turn_on_locked() {
  if (g_recording.load(std::memory_order_relaxed)) return;
  if (!subscribe_locked()) return;
  find_cuda_library_code();
  set_buffers_wanted(true);
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  g_recording.store(true, std::memory_order_release);
  bool on = true;
  for (CUpti_ActivityKind kind : kRecorded) {
    on = on && cupti_ok(cupti().activity_enable(kind), "cuptiActivityEnable");
  }
  on = on && enable_launch_callbacks(true);
  if (!on) {
    go_quiet();
    turn_off_locked();
  }
}

// With g_mutex held: turns recording on or off as the agent's presence says.
void follow_the_agent_locked() {
  bool wanted = agent_attached() && !quiet() && !g_exiting;
  if (wanted) {
    turn_on_locked();
  } else {
    turn_off_locked();
  }
}

void watch() {
  std::unique_lock lock(g_mutex);
  while (!g_exiting) {
    g_wake.wait_for(lock, recording() ? kFlushEvery : kWatchEvery,
                    [] { return g_exiting || g_hand_over_soon; });
    g_hand_over_soon = false;
    follow_the_agent_locked();
    if (!recording()) continue;
    lock.unlock();
    hand_over_launches();
    if (!cupti_ok(cupti().activity_flush_all(0), "cuptiActivityFlushAll")) go_quiet();
    lock.lock();
  }
  turn_off_locked();
}

}  // namespace

bool recording() { return g_recording.load(std::memory_order_acquire); }

uint64_t recording_epoch() { return g_epoch.load(std::memory_order_relaxed); }

void hand_over_soon() {
  std::unique_lock lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;  // the watcher is at work already
  g_hand_over_soon = true;
  g_wake.notify_one();
}

bool start_watching(CUpti_CallbackFunc on_api) {
  try {
    std::lock_guard lock(g_mutex);
    g_on_api = on_api;
    follow_the_agent_locked();
    g_watcher = std::thread(watch);
    return true;
  } catch (...) {
    log_once("cannot start the watcher thread: GPU profiling is off");
    return false;
  }
}

void stop_watching_for_exit() {
  try {
    std::unique_lock lock(g_mutex);
    g_exiting = true;
    g_wake.notify_all();
    std::thread watcher = std::move(g_watcher);
    lock.unlock();
    if (watcher.joinable()) watcher.join();  // it turns recording off on its way out
  } catch (...) {
  }
}

}  // namespace dormant::cupti
