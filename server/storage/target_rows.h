// Resolves a request's scope and selectors (target_scope, target_entities) into the hosts and
// pids they pick, against the hosts' latest inventories (inventory_rows.h). Callers hold the
// transaction.
#pragma once

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// hostname → nullopt (the whole host) for kService and kHost; hostname → its sorted pids for the
// narrower scopes. Hosts where nothing matched are not in it.
// `now` is the server's clock.
Result<TargetHosts> resolve_targets(Database& db, const TargetQuery& query, TimePoint now);

}  // namespace dormant::server::storage
