// The profiling_requests table. Callers hold the transaction.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "server/storage/args_rows.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// Its additional_args go through `args`.
Result<void> insert_request(Database& db, const ProfilingRequestRecord& request, ArgsWriter& args);
Result<void> set_request_status(Database& db, const std::string& request_id, RequestStatus status);
Result<std::optional<ProfilingRequestRecord>> find_request(Database& db,
                                                           const std::string& request_id);

// Moves the requests that `command_id` carries out on to `status`: to kAssigned from kPending,
// to kCompleted or kFailed from kPending or kAssigned. A request's first outcome stands.
Result<void> advance_requests(Database& db, const std::string& command_id, RequestStatus status);

// Deletes up to `batch` requests made before `cutoff` that no remaining command carries out.
// Returns how many it deleted.
Result<int64_t> delete_requests_before(Database& db, TimePoint cutoff, int64_t batch);

}  // namespace dormant::server::storage
