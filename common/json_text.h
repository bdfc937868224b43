// JSON text of values that hold what the host said: process names cut mid-character by the
// kernel, a tool's raw stderr. Bytes that are not UTF-8 become U+FFFD instead of an exception.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dormant {

inline std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dormant
