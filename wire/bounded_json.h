// Parsing JSON from a peer that may be hostile, within a budget: the document is refused as soon
// as it nests deeper or holds more values than allowed, before those are built. A megabyte of
// "[{},{},..." would otherwise become a DOM a hundred times its size.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "wire/limits.h"

namespace dormant::wire {

struct JsonBudget {
  int max_depth = kMaxNesting;      // arrays and objects, the outermost included
  std::size_t max_values = 50'000;  // every value, key, array and object counts one
};

// The JSON document `text`, or an error naming `name` and what it passed.
Result<nlohmann::json> parse_json_within(std::string_view text, std::string_view name,
                                         JsonBudget budget = {});

}  // namespace dormant::wire
