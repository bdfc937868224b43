// Dormant or attached. Dormant, the library holds no CUPTI subscription (the program's own CUPTI
// client, torch.profiler's or Nsight's, can have it), no activity buffer, and records nothing; a
// watcher thread looks at the probe's semaphore every kWatchEvery. Once an agent attaches, the
// watcher subscribes, turns the launch callbacks and kernel/memcpy/memset recording on, and hands
// launches and completed records over every kFlushEvery; once the agent has gone, it turns them
// off, frees the buffers and lets the subscription go. While another client holds CUPTI the
// library says so once and tries again at each look.
#pragma once

#include <chrono>
#include <cstdint>

#include <cupti.h>

namespace dormant::cupti {

inline constexpr std::chrono::milliseconds kWatchEvery{250};
inline constexpr std::chrono::milliseconds kFlushEvery{100};

// Starts watching, after one look of its own: an agent attached already (a program started under
// `dormant-agent gpu`) has recording on before the first launch; `on_api` is the launch callback
// to subscribe with. False if it cannot.
bool start_watching(CUpti_CallbackFunc on_api);
bool recording();
// Counts the times recording was turned on: what a thread learned of its API calls in an earlier
// one (inside a launch whose exit was never seen) does not hold in this one.
uint64_t recording_epoch();

// Asks the watcher to hand records over now rather than at its next tick: many launches have
// gone out since, and their records are better not far behind. Never blocks.
void hand_over_soon();

// At the program's exit: hands over what is recorded (the agent may still be attached), then
// stops recording and watching for good.
void stop_watching_for_exit();

}  // namespace dormant::cupti
