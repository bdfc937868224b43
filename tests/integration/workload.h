// The known-ratio workload the integration tests profile (tests/fakes/known_ratio.c), or another
// program taking the same SECONDS argument; each test target defines KNOWN_RATIO.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/eventually.h"

#include "common/subprocess.h"

namespace dormant::testing {

inline std::unique_ptr<Subprocess> spawn_workload(double seconds,
                                                  const std::string& program = KNOWN_RATIO) {
  SpawnOptions options;
  options.argv = {program, std::to_string(seconds)};
  options.stdout_to = Redirect::null();
  auto child = Subprocess::spawn(options);
  EXPECT_TRUE(child.ok()) << (child.ok() ? "" : child.error().message());
  return child.ok() ? std::move(*child) : nullptr;
}

// Nanoseconds `pid` has run on a CPU (/proc/PID/schedstat); 0 once it is reaped.
inline uint64_t on_cpu_ns(pid_t pid) {
  std::ifstream schedstat("/proc/" + std::to_string(pid) + "/schedstat");
  uint64_t ns = 0;
  schedstat >> ns;
  return ns;
}

// Waits until `pid` has run `seconds` more on a CPU: a sampler then has that much of it to
// sample however loaded the machine is, where a wall-clock wait may give it next to nothing.
inline bool ran_for_cpu_seconds(pid_t pid, double seconds,
                                std::chrono::milliseconds limit = std::chrono::seconds(120)) {
  const uint64_t start = on_cpu_ns(pid);
  const auto wanted = static_cast<uint64_t>(seconds * 1e9);
  return eventually([&] { return on_cpu_ns(pid) >= start + wanted; }, limit);
}

}  // namespace dormant::testing
