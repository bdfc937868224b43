// The known-ratio workload the integration tests profile (tests/fakes/known_ratio.c), or another
// program taking the same SECONDS argument; each test target defines KNOWN_RATIO.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

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

}  // namespace dormant::testing
