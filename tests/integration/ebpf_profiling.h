// What the eBPF profiler's integration tests share: a profile of a given length, and the frames
// of its stacks by name.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "profile/stack_table.h"
#include "profilers/ebpf/ebpf_profiler.h"

namespace dormant::profilers::ebpf {

// Each frame of a stack by name, root first.
inline std::vector<std::string_view> frames_of(const profile::StackTable& table,
                                               const profile::StackView& stack) {
  std::vector<std::string_view> frames;
  for (auto id : stack.frame_ids) frames.push_back(table.string(id));
  return frames;
}

inline bool has_frame(const std::vector<std::string_view>& frames, std::string_view name) {
  return std::find(frames.begin(), frames.end(), name) != frames.end();
}

// A profile of `length`; `facts`, when given, gets the profile header's figures.
inline profile::StackTable profile_for(EbpfProfilerOptions options,
                                       std::chrono::milliseconds length,
                                       const std::function<void()>& meanwhile = {},
                                       nlohmann::json* facts = nullptr) {
  EbpfProfiler profiler(std::move(options));
  auto started = profiler.start();
  EXPECT_TRUE(started.ok()) << started.error().message();
  if (!started) return {};
  if (meanwhile) meanwhile();
  std::this_thread::sleep_for(length);
  auto snapshot = profiler.snapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.error().message();
  if (facts) *facts = profiler.header_facts();
  profiler.stop();
  return snapshot.ok() ? std::move(*snapshot) : profile::StackTable();
}

}  // namespace dormant::profilers::ebpf
