// The library's two USDT probes and the semaphore that says whether an agent is attached: the
// kernel raises it in every process that maps this library while a probe of "launch" is attached.
#pragma once

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "dormant_cupti/probes.h"

extern "C" {
extern volatile unsigned short dormant_cupti_launch_semaphore;
extern volatile unsigned short dormant_cupti_activity_semaphore;
}

namespace dormant::cupti {

inline bool agent_attached() { return dormant_cupti_launch_semaphore != 0; }

// Out of line, so that each probe has one site.
void fire_launch_probe(const dormant_cupti_launch_batch* launches);
void fire_activity_probe(const dormant_cupti_batch* batch);

}  // namespace dormant::cupti
