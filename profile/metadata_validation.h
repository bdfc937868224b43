// Checks the header of an uploaded collapsed profile the way Performance Studio's AgentMetadata
// model does (docs/protocol.md), so that our server refuses what Studio would refuse.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace dormant::profile {

// `header` is the JSON object after "# " on the profile's first line. It needs a `metadata`
// object with every field Studio requires, each of the right JSON type. Errors name the field:
// "metadata.kernel_release: required", "metadata.processors: must be a number".
Result<void> validate_profile_header(const nlohmann::json& header);

}  // namespace dormant::profile
