// The fake CUDA program's own CUPTI client, as torch.profiler or Nsight would be one: subscribed
// while a file exists, counting the launches CUPTI calls it back for.
#pragma once

#include <cstdint>

struct OwnCuptiClient {
  uint64_t subscribed = 0;  // times it subscribed
  uint64_t refused = 0;     // times CUPTI refused it (another subscriber had it)
  uint64_t callbacks = 0;   // launches it was called back for
};

// Subscribes when `wanted` and not subscribed, lets go when not `wanted`. One thread at a time.
void follow_own_cupti_client(bool wanted);
OwnCuptiClient own_cupti_client();
