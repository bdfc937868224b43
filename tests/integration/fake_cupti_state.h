// What a fake CUDA program's fake CUPTI has on (tests/fakes/cuda/fake_cupti.cpp): on SIGUSR1 it
// writes "callbacks=C kinds=K buffers=B" to the file FAKE_CUPTI_STATE_FILE names.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <signal.h>

#include "tests/support/eventually.h"

#include "common/atomic_file.h"

namespace dormant::testing {

inline constexpr const char* kFakeCuptiDormant = "callbacks=0 kinds=0 buffers=0\n";

// Whether SIGUSR1 has a handler in `pid` (/proc/PID/status, SigCgt: a hex mask, signal N at
// bit N - 1): before the fake CUPTI is loaded, the signal would end the program.
inline bool catches_sigusr1(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("SigCgt:")) continue;
    uint64_t caught = std::stoull(line.substr(7), nullptr, 16);
    return (caught >> (SIGUSR1 - 1)) & 1;
  }
  return false;
}

// The state process `pid` writes to `state_file`; "" if it has no handler yet or says nothing
// within 5 s.
inline std::string fake_cupti_state(pid_t pid, const std::filesystem::path& state_file) {
  std::filesystem::remove(state_file);
  if (!catches_sigusr1(pid)) return "";
  ::kill(pid, SIGUSR1);
  std::string state;
  eventually([&] { return !(state = read_file(state_file).value_or("")).empty(); },
             std::chrono::seconds(5));
  return state;
}

}  // namespace dormant::testing
