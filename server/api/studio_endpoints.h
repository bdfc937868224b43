// What Performance Studio's web UI asks of a server besides its flamegraphs (those are
// RenderEndpoints'): its lists of services and overview, the metrics bar and the service view's
// graphs, the filter panel's values and saved filters, snapshots, the install page's key, and its
// report views, which this server answers as having none (agent-supplied HTML would run with the
// viewer's rights). Every answer has the shape the UI reads (docs/studio-ui.md).
#pragma once

#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/router.h"

namespace dormant::server::api {

class StudioEndpoints : private EndpointContext {
 public:
  StudioEndpoints(storage::Store& store, ServerMetrics& metrics, const ApiOptions& options)
      : EndpointContext(store, metrics, options) {}

  std::vector<Route> routes();

 private:
  http::Response services(const Call& call);
  http::Response overview(const Call& call);
  http::Response overview_services(const Call& call);
  http::Response api_key(const Call& call);

  http::Response summary(const Call& call);
  http::Response nodes_cores_summary(const Call& call);
  http::Response instance_type_count(const Call& call);
  http::Response cpu_trend(const Call& call);
  http::Response usage_graph(const Call& call);
  http::Response nodes_and_cores_graph(const Call& call);

  http::Response filter_values(const Call& call);
  http::Response saved_filters(const Call& call);
  http::Response save_filter(const Call& call);
  http::Response replace_filter(const Call& call);
  http::Response delete_filter(const Call& call);

  http::Response save_snapshot(const Call& call);
  http::Response snapshot(const Call& call);

  http::Response html_report(const Call& call);
  http::Response adhoc_flamegraphs(const Call& call);
  http::Response no_report(const Call& call);
};

}  // namespace dormant::server::api
