// The JSON held in text columns: written with nlohmann::json, read back without exceptions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

// The text stored for `value`. Strings that are not valid UTF-8 get U+FFFD for their bad bytes
// rather than failing the write.
std::string json_text(const nlohmann::json& value);
// The SHA-256 of `text`, in hex: what a row stored once is named by, or compared by.
std::string text_digest(std::string_view text);

// `column` names the column in error messages.
Result<nlohmann::json> parse_json_column(std::string_view text, std::string_view column);

std::string strings_to_json(const std::vector<std::string>& strings);
Result<std::vector<std::string>> strings_from_json(std::string_view text, std::string_view column);

// nullopt (the whole host) is SQL NULL.
std::optional<std::string> pids_to_json(const std::optional<PidList>& pids);
Result<std::optional<PidList>> pids_from_json(const std::optional<std::string>& text,
                                              std::string_view column);

// {"hostname": [pids] | null, ...}
std::string target_hosts_to_json(const TargetHosts& hosts);
Result<TargetHosts> target_hosts_from_json(std::string_view text, std::string_view column);

}  // namespace dormant::server::storage
