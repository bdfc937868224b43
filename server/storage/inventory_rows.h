// host_containers and host_processes: each host's latest inventory, as rows that selectors and
// the status views query. A heartbeat rewrites them only when its inventory differs from the one
// stored (hosts.inventory_digest): a fleet whose pods do not move writes none. Callers hold the
// transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// Stores `containers` as the host's inventory, each pid once (its first container keeps it), unless
// it is the one stored already. Returns its digest.
Result<std::string> sync_inventory(Database& db, const std::string& hostname,
                                   const std::string& service,
                                   const std::vector<HostContainer>& containers);

// Whether the host's inventory as stored has `digest`.
Result<bool> inventory_has_digest(Database& db, const std::string& hostname,
                                  const std::string& service, const std::string& digest);

// The host's inventory as stored, in the heartbeat's order.
Result<std::vector<HostContainer>> read_inventory(Database& db, const std::string& hostname,
                                                  const std::string& service);

// The inventory of `hostname` in `service`; nullopt when that host is not known or has not been
// heard from since `active_since`.
Result<std::optional<HostInventory>> read_host_inventory(Database& db, const std::string& hostname,
                                                         const std::string& service,
                                                         TimePoint active_since);

}  // namespace dormant::server::storage
