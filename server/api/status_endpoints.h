// The endpoints that show what the server holds: Studio's status views, listings of hosts,
// commands, requests and profiles, a profile's text, the health check and /metrics.
#pragma once

#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/router.h"

namespace dormant::server::api {

class StatusEndpoints : private EndpointContext {
 public:
  StatusEndpoints(storage::Store& store, ServerMetrics& metrics, const ApiOptions& options)
      : EndpointContext(store, metrics, options) {}

  std::vector<Route> routes();

 private:
  // profiling_status.h and workload_status.h: Studio's status views.
  http::Response host_status(const Call& call);
  http::Response workload_status(const Call& call);
  http::Response health_check(const Call& call);
  http::Response list_hosts(const Call& call);
  http::Response list_commands(const Call& call);
  http::Response get_command(const Call& call);
  http::Response get_request(const Call& call);
  http::Response list_profiles(const Call& call);
  http::Response get_profile(const Call& call);
  http::Response download_profile(const Call& call);
  http::Response prometheus_metrics(const Call& call);
};

}  // namespace dormant::server::api
