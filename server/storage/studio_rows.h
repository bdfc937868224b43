// The rows behind Performance Studio's web UI (studio_records.h): upload metrics, services' hosts
// and data, saved filters and snapshots. Callers hold the transaction.
#pragma once

#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/studio_records.h"

namespace dormant::server::storage {

// Per slot, host and instance type.
Result<std::vector<HostSlotMetrics>> read_upload_metrics(Database& db,
                                                         const UploadMetricsQuery& query);

// Keeps the cores an upload of a host gave on the host's row, where the heartbeats made one.
Result<void> note_host_processors(Database& db, const std::string& hostname,
                                  const std::string& service, int64_t processors);

// Hosts heard from since `since_ms`, by service and hostname.
Result<std::vector<ServiceHost>> read_service_hosts(Database& db, int64_t since_ms);
// Services with rollups since `since_ms` (day buckets, and minutes for the days not compacted
// yet), by name.
Result<std::vector<ServiceDataSpan>> read_service_data_spans(Database& db, int64_t since_ms);

struct SavedFilterCaps {
  int64_t per_service = 1000;
  int64_t in_all = 10'000;
};
// Refused (kInvalidArgument) past `caps`: a row a user saved is never deleted to make room.
Result<int64_t> insert_saved_filter(Database& db, const SavedFilter& filter, int64_t now_ms,
                                    const SavedFilterCaps& caps);
// False: no such filter.
Result<bool> update_saved_filter(Database& db, int64_t id, const std::string& filter);
Result<bool> delete_saved_filter(Database& db, int64_t id);
// Oldest first.
Result<std::vector<SavedFilter>> read_saved_filters(Database& db, const std::string& service);

// Refused (kInvalidArgument) when `most` are kept already.
Result<int64_t> insert_snapshot(Database& db, const Snapshot& snapshot, int64_t now_ms,
                                int64_t most);
Result<std::optional<Snapshot>> find_snapshot(Database& db, int64_t id);

}  // namespace dormant::server::storage
