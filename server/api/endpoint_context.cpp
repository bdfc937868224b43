#include "server/api/endpoint_context.h"

#include <string>

#include <spdlog/spdlog.h>

#include "server/api/api_requests.h"

namespace dormant::server::api {

using boost::beast::http::status;

Refusal EndpointContext::store_refusal(const Error& error) {
  if (error.kind() == ErrorKind::kNotFound) return {status::not_found, error.message(), nullptr};
  if (error.kind() == ErrorKind::kInvalidArgument) {
    return {status::unprocessable_entity, error.message(), nullptr};
  }
  if (storage::is_storage_refusal(error) || error.kind() == ErrorKind::kUnavailable ||
      error.kind() == ErrorKind::kTimeout) {
    // The store logged it when the refusals began; each refused request is only counted. A
    // database that cannot be reached, or is too slow (a lock held, every connection busy), is
    // waited out the same way.
    metrics_.add(Counter::kStorageRefusals);
    return {status::service_unavailable, error.message(), nullptr, kStorageRetryAfterS};
  }
  metrics_.add(Counter::kStorageErrors);
  spdlog::error("storage: {}", error.message());  // paths and SQLite's words stay in the log
  return {status::internal_server_error,
          "the server could not read or write its data; its log says why", nullptr};
}

}  // namespace dormant::server::api
