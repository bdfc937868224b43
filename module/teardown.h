// Stops a session's profilers, each in isolation: all stop() calls run at once on threads of
// their own, so an error or a hang in one never keeps another running. A stop() still running at
// the deadline gets abort(), which kills the processes it waits on; once it returns, the profiler
// is freed like the others. One that does not return even then (stuck in the kernel) is
// abandoned: its thread and its profiler are left alone (never freed under it) and the report
// says so; the audit that follows counts what it still holds.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "module/api/profiler_module.h"
#include "profilers/profiler.h"

namespace dormant::module {

// How long a stop() has to return once abort() has killed its processes.
inline constexpr std::chrono::seconds kAbortGrace{1};

TeardownReport stop_profilers(std::vector<std::unique_ptr<profilers::Profiler>> profilers,
                              std::chrono::milliseconds deadline);

}  // namespace dormant::module
