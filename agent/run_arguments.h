// The configuration as the "run_arguments" object of a profile header (the token left out, and
// the pids, which are the session's).
#pragma once

#include <nlohmann/json.hpp>

#include "config/agent_config.h"

namespace dormant::agent {

nlohmann::json run_arguments(const config::AgentConfig& config);

}  // namespace dormant::agent
