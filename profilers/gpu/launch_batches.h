// Reading a batch of launches as libdormant_cupti.so hands it to its "launch" probe (probes.h):
// launch after launch, each cut after its frames. The batch comes from the program's memory:
// a launch whose depths exceed the probe's bounds, or that runs past the bytes present, ends it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "dormant_cupti/probes.h"

namespace dormant::profilers::gpu {

// Hands each launch of the first `count` in `data[0, bytes)` in turn to `on_launch` (valid
// during the call); false when the batch did not hold together to its `count`th launch.
bool for_each_launch(const uint8_t* data, size_t bytes, uint32_t count,
                     const std::function<void(const dormant_cupti_launch&)>& on_launch);

}  // namespace dormant::profilers::gpu
