// The hosts table: one row per (hostname, service_name), rewritten by every heartbeat. Callers
// hold the transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// `now` is the server's clock.
Result<void> upsert_host(Database& db, const HostHeartbeat& heartbeat, TimePoint now);
// In (service_name, hostname) order; current_command is left empty.
Result<std::vector<HostRecord>> find_hosts(Database& db,
                                           const std::optional<std::string>& service_name);

}  // namespace dormant::server::storage
