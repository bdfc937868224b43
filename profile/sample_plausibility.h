// Whether an uploaded profile's sample counts are ones its session could have taken: a sampler at
// F Hz on P processors for D seconds takes at most D × F × P samples of CPU, and (each process's
// GPU time on a device being at most the session's, as the agent caps it) at most as many of GPU
// work on each device. An upload that claims more would outweigh every honest host in a merge.
#pragma once

#include <cstdint>
#include <map>

#include "common/result.h"
#include "profile/collapsed.h"

namespace dormant::profile {

// Whether a profile's header says its samples are clock ticks: not where profiling_mode is other
// than "cpu" (allocation samples), nor in Java's wall-clock mode (a sample per thread).
bool samples_are_clock_ticks(const nlohmann::json& header);

// A profile's samples by what they are: a GPU's (the stacks rooted at its "[GPU n]" frame), the
// kernel's idle task's (idle_stacks.h), or a busy CPU's. Each sum stops at UINT64_MAX: an
// allocation profile's counts are not bounded, and a sum that wrapped would pass any check.
struct SampleCounts {
  uint64_t cpu_busy = 0;
  uint64_t cpu_idle = 0;
  std::map<uint32_t, uint64_t> gpu;  // by device

  uint64_t cpu() const;
  uint64_t total() const;
};
SampleCounts count_samples(const CollapsedProfile& profile);

// Checks `profile`, whose session lasted `duration_s`, against its header's frequency
// (metadata.run_arguments.frequency, a number or a numeric string; the highest the agent allows
// where it is missing) and processors (metadata.processors), with 10% and a second of slack.
// Profiles whose samples are not clock ticks pass: profiling_mode other than "cpu" (allocation
// samples), and Java's wall-clock mode (a sample per thread).
Result<void> check_plausible_samples(const CollapsedProfile& profile, double duration_s);
// The same for a profile already counted: its header, and what count_samples() found in it.
Result<void> check_plausible_samples(const nlohmann::json& header, const SampleCounts& counts,
                                     double duration_s);

}  // namespace dormant::profile
