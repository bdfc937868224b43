// What every group of endpoints shares: the store, the server's counters and options, and the
// answer to a failed store operation.
#pragma once

#include "common/result.h"
#include "server/api/api_options.h"
#include "server/api/call.h"
#include "server/api/refusal.h"
#include "server/api/server_metrics.h"
#include "server/storage/store.h"

namespace dormant::server::api {

// When a client refused for a full or read-only data directory should try again. Agents keep
// what they could not send (a spooled profile, a completion) and retry on any 5xx.
inline constexpr int kStorageRetryAfterS = 30;

class EndpointContext {
 protected:
  EndpointContext(storage::Store& store, ServerMetrics& metrics, const ApiOptions& options)
      : store_(store), metrics_(metrics), options_(options) {}

  // The answer to a failed store operation: 404 for kNotFound, 422 for a request the store
  // refuses, 503 with Retry-After and the reason when the data directory is full or read-only
  // (is_storage_refusal) or the database cannot be reached (kUnavailable), 500 (counted, logged)
  // for the rest.
  Refusal store_refusal(const Error& error);
  http::Response store_failure(const Error& error) { return to_response(store_refusal(error)); }

  storage::Store& store_;
  ServerMetrics& metrics_;
  const ApiOptions& options_;
};

}  // namespace dormant::server::api
