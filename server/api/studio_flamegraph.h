// A merged profile as the tree Performance Studio's web UI draws (GET /api/flamegraph with
// serviceName): nodes of inclusive samples per call-stack prefix, process names first, children
// in name order (snapshots find frames again by their place), each with its language, the
// gProfiler marker cut off as its suffix, and the percentiles of every node's value. At most
// `max_frames` nodes, the largest (a node's parent is at least as large, so it is kept too).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile/stack_table.h"

namespace dormant::server::api {

struct StudioFrame {
  std::string_view name;          // without its suffix
  std::string_view suffix;        // "_[j]", "_[i]", …; empty when none is cut
  std::string_view language;      // Java, Python, PHP, Ruby, Node, .NET, C++, Kernel, Go, Other
  std::string_view special_type;  // "Java (inl)", "Java (C1)", "Java (interpreted)", "Appid"
};

// What the UI shows of a frame named `name` under a parent of `parent_language`.
StudioFrame studio_frame(std::string_view name, std::string_view parent_language);

struct StudioTreeOptions {
  size_t max_frames = 10000;  // Studio's STACKS_COUNT_DEFAULT
  bool languages = true;      // enrichment=lang
};

// The root: {"name": "root", "value", "children", "percentiles"}; with no samples,
// {"name": "root", "value": 0, "children": [], "percentiles": {}}.
nlohmann::json studio_flamegraph(const profile::StackTable& stacks,
                                 const StudioTreeOptions& options);

}  // namespace dormant::server::api
