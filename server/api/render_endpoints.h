// The endpoints that draw: one stored profile, the merge of a service's time range (as SVG,
// collapsed text or pprof, or as the tree Performance Studio's UI draws), and the differential
// flamegraph of two time ranges; and a profile's GPU devices. One profile's are drawn on the render
// pool and kept as drawn (svg_cache.h); merges run on the merge pool, as many at once as there are
// slots (merge_slots.h).
#pragma once

#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/merge_slots.h"
#include "server/api/router.h"
#include "server/api/svg_cache.h"

namespace dormant::server::api {

struct MergeSelection;

class RenderEndpoints : private EndpointContext {
 public:
  RenderEndpoints(storage::Store& store, ServerMetrics& metrics, const ApiOptions& options)
      : EndpointContext(store, metrics, options),
        merge_slots_(options.concurrent_merges),
        svg_cache_(options.svg_cache_bytes) {}

  std::vector<Route> routes();

 private:
  http::Response profile_flamegraph(const Call& call);
  // 404 with why_nothing_merged's reason.
  http::Response nothing_merged(const MergeSelection& selection, std::string_view side);
  http::Response profile_gpus(const Call& call);
  http::Response profile_pprof(const Call& call);
  // Ours by `service`, Performance Studio's UI's by `serviceName` (its JSON tree).
  http::Response merged_flamegraph(const Call& call);
  http::Response studio_flamegraph_tree(const Call& call);
  // Performance Studio's UI's time picker: the first and last times with data in a year.
  http::Response studio_data_span(const Call& call);
  http::Response diff_flamegraph(const Call& call);
  // Performance Studio's UI's "Download Flame Graph": the SVG of its view, as a file.
  http::Response studio_svg_download(const Call& call);
  // Its service view's samples per slot.
  http::Response studio_samples(const Call& call);
  // Its table view's trend of one function: its share of the samples per slot.
  http::Response studio_function_share(const Call& call);

  MergeSlots merge_slots_;
  SvgCache svg_cache_;
};

}  // namespace dormant::server::api
