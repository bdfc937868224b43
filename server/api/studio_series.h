// The time series of Performance Studio's service view (samples per slot) and table view (one
// function's share per slot), from the rollups: a range's stacks are read once to tell which are
// idle and which hold the function, then its buckets slot by slot, counted by those classes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "server/api/profile_merge.h"
#include "server/storage/store.h"

namespace dormant::server::api {

struct SlotSamples {
  int64_t slot_ms = 0;
  uint64_t samples = 0;  // idle samples left out, as the flamegraph leaves them out
  uint64_t holding = 0;  // of those, the samples of stacks with a frame named `function`
};

// In time order; slots without data left out. `function` empty: no stack holds it.
Result<std::vector<SlotSamples>> studio_series(storage::Store& store,
                                               const MergeSelection& selection, int64_t slot_ms,
                                               std::string_view function);

}  // namespace dormant::server::api
