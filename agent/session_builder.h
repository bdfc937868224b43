// Builds the profilers a configuration asks for. Building touches nothing on the host; the
// profilers probe and spawn in their start().
#pragma once

#include <memory>
#include <vector>

#include "config/agent_config.h"
#include "profilers/profiler.h"

namespace dormant::agent {

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(
    const config::AgentConfig& config);

}  // namespace dormant::agent
