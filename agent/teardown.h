// Stops a session's profilers, each in isolation: all stop() calls run at once on threads of
// their own, so an error or a hang in one never keeps another running. A stop() still running at
// the deadline is abandoned: its thread and its profiler are left alone (never freed under it),
// the children it spawned die with the session's thread (Subprocess sets PR_SET_PDEATHSIG), and
// the report says so; the audit that follows counts what it still holds.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "profilers/profiler.h"

namespace dormant::agent {

struct TeardownReport {
  std::vector<std::string> problems;  // "perf: stop() did not end within 10 s; abandoned"
  std::chrono::milliseconds took{0};
};

TeardownReport stop_profilers(std::vector<std::unique_ptr<profilers::Profiler>> profilers,
                              std::chrono::milliseconds deadline);

}  // namespace dormant::agent
