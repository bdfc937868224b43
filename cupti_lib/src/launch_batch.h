// The launches waiting for the launch probe: one batch for the process, handed over when it has
// no room for another launch of the deepest stack, and by the flusher every kFlushEvery, so that
// the probe's trap (a few microseconds) is paid once per batch rather than once per launch.
#pragma once

#include "dormant_cupti/probes.h"

namespace dormant::cupti {

// Adds `launch` (its header and `depth` frames) to the batch.
void add_launch(const dormant_cupti_launch& launch);
// Hands the waiting launches to the probe now.
void hand_over_launches();

}  // namespace dormant::cupti
