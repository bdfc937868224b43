// The endpoints that draw: one stored profile, the merge of every profile a query selects, and the
// differential flamegraph of two time ranges; as SVG, collapsed text or pprof; and a profile's
// GPU devices. One profile's are drawn on the render pool and kept as drawn (svg_cache.h);
// merges run on the merge pool, as many at once as there are slots (merge_slots.h).
#pragma once

#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/merge_slots.h"
#include "server/api/router.h"
#include "server/api/svg_cache.h"

namespace dormant::server::api {

class RenderEndpoints : private EndpointContext {
 public:
  RenderEndpoints(storage::Store& store, ServerMetrics& metrics, const ApiOptions& options)
      : EndpointContext(store, metrics, options),
        merge_slots_(options.concurrent_merges),
        svg_cache_(options.svg_cache_bytes) {}

  std::vector<Route> routes();

 private:
  http::Response profile_flamegraph(const Call& call);
  http::Response profile_gpus(const Call& call);
  http::Response profile_pprof(const Call& call);
  http::Response merged_flamegraph(const Call& call);
  http::Response diff_flamegraph(const Call& call);
  // A merge's failure: 413 past its budget of text, 503 for one stopped because its client left
  // (counted), store_failure's for the rest.

  MergeSlots merge_slots_;
  SvgCache svg_cache_;
};

}  // namespace dormant::server::api
