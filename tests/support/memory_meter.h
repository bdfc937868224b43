// What a piece of work costs the test's own process in memory: its peak over what was held when
// the meter started, and what the process holds now. In a plain build these are VmHWM over VmRSS
// and USS. Under AddressSanitizer, whose shadow and quarantine would swamp those, they are the
// heap's live bytes as the sanitizer's allocator hooks count them: what the code itself allocated.
#pragma once

#include <cstdint>

namespace dormant::testing {

class MemoryMeter {
 public:
  MemoryMeter();  // the peak counts from now

  // "VmHWM, USS" or "heap bytes": what the figures are, for the test's output.
  static const char* measure();
  // How far the peak has risen over what was held at construction.
  uint64_t peak_growth_kb() const;
  // What the process holds now; to be compared with another reading only (the heap's count may
  // start below zero).
  static int64_t held_kb();

 private:
  int64_t start_kb_ = 0;
};

}  // namespace dormant::testing
