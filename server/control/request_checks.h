// Checks start and stop requests before the store plans anything, with messages a user can act
// on, and brings pid lists to their normal form (sorted, no duplicates).
#pragma once

#include <cstddef>

#include "common/result.h"
#include "server/storage/records.h"

namespace dormant::server::control {

// The most hosts one request may name: each is a row, written while heartbeats wait in turn.
inline constexpr size_t kMaxTargetHosts = 10000;

Result<storage::StartRequest> checked_start(storage::StartRequest request);
Result<storage::StopRequest> checked_stop(storage::StopRequest request);

}  // namespace dormant::server::control
