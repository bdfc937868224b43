#include "cupti_lib/src/attachment.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <cupti.h>

#include "cupti_lib/src/activity_buffers.h"
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
bool g_exiting = false;
std::thread g_flusher;

// With g_mutex held. Records still in CUPTI's buffers are handed over (if an agent is still
// attached) and the buffers freed.
void turn_off_locked() {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  for (CUpti_ActivityKind kind : kRecorded) (void)cuptiActivityDisable(kind);
  (void)cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  hand_over_dropped();
  set_buffers_wanted(false);
  g_recording.store(false, std::memory_order_release);
}

void flush_until_detached() {
  std::unique_lock lock(g_mutex);
  while (true) {
    g_wake.wait_for(lock, kFlushEvery, [] { return g_exiting; });
    if (g_exiting || quiet() || !agent_attached()) {
      turn_off_locked();
      return;
    }
    lock.unlock();
    if (!cupti_ok(cuptiActivityFlushAll(0), "cuptiActivityFlushAll")) go_quiet();
    lock.lock();
  }
}

}  // namespace

bool recording() { return g_recording.load(std::memory_order_acquire); }

void ensure_recording() {
  if (recording()) return;
  try {
    std::lock_guard lock(g_mutex);
    if (recording() || g_exiting || quiet()) return;
    if (g_flusher.joinable()) g_flusher.join();  // it has turned recording off and returned
    find_cuda_library_code();
    set_buffers_wanted(true);
    for (CUpti_ActivityKind kind : kRecorded) {
      if (!cupti_ok(cuptiActivityEnable(kind), "cuptiActivityEnable")) {
        go_quiet();
        g_recording.store(true, std::memory_order_relaxed);  // what was enabled goes off below
        turn_off_locked();
        return;
      }
    }
    g_recording.store(true, std::memory_order_release);
    g_flusher = std::thread(flush_until_detached);
  } catch (...) {
    log_once("cannot start recording (out of memory or threads): GPU profiling is off");
    go_quiet();
  }
}

void stop_recording_for_exit() {
  try {
    std::unique_lock lock(g_mutex);
    g_exiting = true;
    g_wake.notify_all();
    std::thread flusher = std::move(g_flusher);
    lock.unlock();
    if (flusher.joinable()) flusher.join();
    lock.lock();
    turn_off_locked();
  } catch (...) {
  }
}

}  // namespace dormant::cupti
