// An uploaded profile as the rollups take it (server/storage/rollup_records.h): its stacks
// without their container frame, each under the id of its text, grouped by container; and what
// its header says of the host.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile/collapsed.h"
#include "server/storage/rollup_records.h"

namespace dormant::server::api {

// The text a stack is kept under: "comm;frame;…;frame", root first.
std::string stack_text(const profile::StackTable& table, const profile::StackView& stack);
storage::StackId stack_id(std::string_view text);

// A profile's parts: one per container, at most kMaxRollupParts; the stacks of containers past
// them (by name) are kept under kContainersPastCap: each part costs three bucket writes.
inline constexpr size_t kMaxRollupParts = 1024;
inline constexpr std::string_view kContainersPastCap = "[containers past the 1,024th]";

storage::ProfileRollup rollup_of(const profile::CollapsedProfile& profile,
                                 std::string_view hostname, std::string_view instance_type);

// The header's metadata.cloud_info.instance_type after its last '/' (GCP's machine types are
// paths); "" when it has none.
std::string instance_type_of(const nlohmann::json& header);
// The header's metadata.processors (a number, or one written as text); 0 where it gives none or
// one no host has.
int64_t processors_of(const nlohmann::json& header);

}  // namespace dormant::server::api
