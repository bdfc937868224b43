// The endpoints people call to profile: one start or stop request, or many at once (Studio's
// bulk), by hosts or by selectors; and the subscriptions that continuous starts by selectors made.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/router.h"
#include "server/control/commands.h"
#include "wire/profiling_request.h"

namespace dormant::server::api {

class RequestEndpoints : private EndpointContext {
 public:
  RequestEndpoints(storage::Store& store, control::Commands& commands, ServerMetrics& metrics,
                   const ApiOptions& options)
      : EndpointContext(store, metrics, options), commands_(commands) {}

  std::vector<Route> routes();

 private:
  http::Response profile_request(const Call& call);
  http::Response bulk_profile_request(const Call& call);
  http::Response list_subscriptions(const Call& call);

  // One request's body parsed, and its selectors resolved into target_hosts; or what refuses it.
  // `dry_run`: overrides the body's.
  struct PreparedRequest {
    wire::ProfilingRequest request;
    std::optional<storage::TargetQuery> selected_by;  // what it was resolved from
  };
  using Prepared = std::variant<PreparedRequest, Refusal>;
  Prepared prepare_request(const nlohmann::json& body, std::optional<bool> dry_run);
  // The perf events a start asks for against those its hosts support: the error that names the
  // hosts that lack some, or nullopt. For bulk requests, as in Studio.
  Result<std::optional<Error>> check_perf_events(const wire::ProfilingRequest& request);
  // A prepared request submitted: the answer, or what refuses it.
  using Submission = std::variant<wire::ProfilingResponse, Refusal>;
  Submission submit_request(const PreparedRequest& prepared);

  control::Commands& commands_;
};

}  // namespace dormant::server::api
