// A heartbeat's share of the subscriptions: the host gets what the subscriptions of its service
// pick on it now (a start for those pids or the whole host; a stop when they picked it before and
// pick nothing now), unless a command of its own stands: an explicit start that runs, or an
// explicit stop made after the subscriptions. The oldest subscription that picks the host lends
// the start its settings and its request.
#pragma once

#include <optional>

#include "common/result.h"
#include "server/storage/store.h"

namespace dormant::server::control {

// The command the heartbeat's host is to follow, or nullopt to leave its current one.
Result<std::optional<storage::PlannedHost>> follow_subscriptions(
    const storage::SubscriptionReads& reads);

}  // namespace dormant::server::control
