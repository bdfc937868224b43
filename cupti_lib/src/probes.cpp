#include "cupti_lib/src/probes.h"

extern "C" {
// Where the kernel counts the probes attached; sys/sdt.h names them provider_probe_semaphore.
__attribute__((visibility("hidden"),
               section(".probes"))) volatile unsigned short dormant_cupti_launch_semaphore = 0;
__attribute__((visibility("hidden"),
               section(".probes"))) volatile unsigned short dormant_cupti_activity_semaphore = 0;
}

namespace dormant::cupti {

__attribute__((noinline)) void fire_launch_probe(const dormant_cupti_launch_batch* launches) {
  STAP_PROBE1(dormant_cupti, launch, launches);
}

__attribute__((noinline)) void fire_activity_probe(const dormant_cupti_batch* batch) {
  STAP_PROBE1(dormant_cupti, activity, batch);
}

}  // namespace dormant::cupti
