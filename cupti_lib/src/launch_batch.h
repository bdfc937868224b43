// The launches waiting for the launch probe: one batch for the process, handed over when it has
// no room for another launch of the deepest stack, and by the watcher every kFlushEvery, so that
// the probe's trap (a few microseconds) is paid once per batch rather than once per launch. After
// kBatchesPerFlush full batches the watcher is asked to hand the records over too: at a high
// launch rate the agent would otherwise hold many launches waiting for their kernels.
#pragma once

#include "dormant_cupti/probes.h"

namespace dormant::cupti {

inline constexpr int kBatchesPerFlush = 32;

// Adds `launch` (its header and `depth` frames) to the batch.
void add_launch(const dormant_cupti_launch& launch);
// Hands the waiting launches to the probe now.
void hand_over_launches();

}  // namespace dormant::cupti
