// Dormant or attached. Dormant, the library holds no activity buffer, records nothing and runs no
// thread of its own. The first launch after an agent attaches turns recording on and starts a
// flusher thread, which hands completed records over every kFlushEvery and turns recording off
// again once the agent has gone.
#pragma once

#include <chrono>

namespace dormant::cupti {

inline constexpr std::chrono::milliseconds kFlushEvery{100};

// Called on each launch while an agent is attached: turns recording on if it is off.
void ensure_recording();
bool recording();

// At the program's exit: hands over what is recorded (the agent may still be attached), then
// stops recording for good.
void stop_recording_for_exit();

}  // namespace dormant::cupti
