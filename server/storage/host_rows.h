// The hosts table: one row per (hostname, service_name), rewritten by every heartbeat. Callers
// hold the transaction.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// `now` is the server's clock.
Result<void> upsert_host(Database& db, const HostHeartbeat& heartbeat, TimePoint now);
// current_command is left empty.
Result<std::vector<HostRecord>> find_hosts(Database& db, const HostFilter& filter);

// hostname → the perf events it said it supports, for each host of `service`.
Result<std::map<std::string, std::vector<std::string>>> find_perf_events(
    Database& db, const std::string& service);

// Which of `hostnames` have a row under `service`: have sent it a heartbeat, and not so long ago
// that their row expired.
Result<std::set<std::string>> find_known_hosts(Database& db, const std::string& service,
                                               const std::vector<std::string>& hostnames);

// Deletes up to `batch` hosts last heard from before `cutoff`. Returns how many it deleted.
Result<int64_t> delete_hosts_before(Database& db, TimePoint cutoff, int64_t batch);

}  // namespace dormant::server::storage
