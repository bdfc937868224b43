// A command's combined_config: what the agent receives, built from the command's spec whenever a
// command is read (it is not stored: it would repeat a request's arguments in every row).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "server/storage/records.h"

namespace dormant::server::storage {

// docs/protocol.md, "Heartbeat": for a start, command_type, continuous, duration, frequency,
// profiling_mode, pids unless whole-host, stop_level when set, and additional_args spread flat;
// for a stop, only stop_level and, at process level, pids.
nlohmann::json build_combined_config(const CommandSpec& spec);

// Keys of combined_config that the server sets and additional_args may not.
bool is_reserved_config_key(std::string_view key);

}  // namespace dormant::server::storage
