// The directories an agent writes to, made and checked before it profiles: --state-dir with its
// work directory, and -o. One another user could write to is refused at start, not after a
// profiling run.
#pragma once

#include "common/result.h"
#include "config/agent_config.h"

namespace dormant::agent {

Result<void> prepare_agent_directories(const config::AgentConfig& config);

}  // namespace dormant::agent
