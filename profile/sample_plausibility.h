// Whether an uploaded profile's sample counts are ones its session could have taken: a sampler at
// F Hz on P processors for D seconds takes at most D × F × P samples of CPU, and (each process's
// GPU time on a device being at most the session's, as the agent caps it) at most as many of GPU
// work on each device. An upload that claims more would outweigh every honest host in a merge.
#pragma once

#include "common/result.h"
#include "profile/collapsed.h"

namespace dormant::profile {

// Checks `profile`, whose session lasted `duration_s`, against its header's frequency
// (metadata.run_arguments.frequency, a number or a numeric string; the highest the agent allows
// where it is missing) and processors (metadata.processors), with 10% and a second of slack.
// Profiles whose samples are not clock ticks pass: profiling_mode other than "cpu" (allocation
// samples), and Java's wall-clock mode (a sample per thread).
Result<void> check_plausible_samples(const CollapsedProfile& profile, double duration_s);

// Whether a profile's header says its samples are clock ticks (as above).
bool samples_are_clock_ticks(const nlohmann::json& header);

}  // namespace dormant::profile
