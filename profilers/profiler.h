// The interface every profiler implements. Constructing one touches nothing on the host: all
// probing, spawning and loading happens in start().
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "profile/stack_table.h"

namespace dormant::profilers {

class Profiler {
 public:
  virtual ~Profiler() = default;

  virtual std::string_view name() const = 0;
  // What it samples on once started ("cpu-clock", "cycles"); empty when that is not a choice.
  virtual std::string_view event() const { return {}; }

  // Probes the host and starts collecting. An error means this profiler does not run in this
  // session; kUnavailable errors are skips (a guard rail, nothing to profile), the rest failures.
  // Either way the message says why, in words a user can act on.
  virtual Result<void> start() = 0;

  // The samples collected since start() or the previous snapshot.
  virtual Result<profile::StackTable> snapshot() = 0;

  // The next snapshot is the session's last: what it still holds back waiting for more (GPU work
  // waiting for its launch) goes into it as it is.
  virtual void before_last_snapshot() {}

  // Stops collecting and releases every process, file and kernel object it holds. Safe to call
  // after a failed start() and more than once.
  virtual void stop() = 0;

  // An optional profiler runs only where the host has something for it (gpu, where programs load
  // libdormant_cupti.so): when it does not start, its reason is reported but its profiles carry
  // no marker saying so.
  virtual bool optional() const { return false; }

  // Figures a profile's header carries for this profiler (under its name); null: none.
  virtual nlohmann::json header_facts() const { return nullptr; }

  // Called from another thread while stop() runs past its deadline: kills every process this
  // profiler started, so that a stop() waiting on them returns. Must not block. A profiler with
  // no processes of its own has nothing to do here.
  virtual void abort() = 0;
};

// A stack that tells the reader of a profile what a profiler could not do:
// "[Profiling perf: perf script died by SIGSEGV]", `count` samples wide, under the profiler's name.
inline void add_profiling_marker(profile::StackTable& stacks, std::string_view profiler,
                                 std::string_view text, uint64_t count = 1) {
  std::string frame = "[Profiling " + std::string(profiler) + ": " + std::string(text) + "]";
  std::string_view frames[] = {frame};
  stacks.add("", profiler, frames, count);
}

}  // namespace dormant::profilers
