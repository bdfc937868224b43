#include "server/storage/combined_config.h"

#include <algorithm>
#include <array>

namespace dormant::server::storage {
namespace {

constexpr std::array<std::string_view, 7> kReservedKeys = {
    "command_type", "continuous", "duration", "frequency", "profiling_mode", "pids", "stop_level"};

}  // namespace

bool is_reserved_config_key(std::string_view key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end();
}

nlohmann::json build_combined_config(const CommandSpec& spec) {
  nlohmann::json config = nlohmann::json::object();
  if (spec.type == CommandType::kStart) {
    config = spec.additional_args.is_object() ? spec.additional_args : nlohmann::json::object();
    config["command_type"] = to_string(spec.type);
    config["continuous"] = spec.continuous;
    config["duration"] = spec.duration_s;
    config["frequency"] = spec.frequency_hz;
    config["profiling_mode"] = to_string(spec.mode);
  }
  if (spec.pids) config["pids"] = *spec.pids;
  if (spec.stop_level) config["stop_level"] = to_string(*spec.stop_level);
  return config;
}

}  // namespace dormant::server::storage
