// The configuration a start command's session runs with: the agent's own flags, with what the
// command sets (duration, frequency, mode, pids, the perf preset...) laid over them, as
// gProfiler's create_profiler_args does.
#pragma once

#include "common/result.h"
#include "config/agent_config.h"
#include "heartbeat/command_config.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

// Fails (with the reason for the command's "failed" completion) when the result is not a
// configuration the agent would accept from its own flags.
Result<config::AgentConfig> settings_for(const config::AgentConfig& agent,
                                         const heartbeat::CommandConfig& command);

// What the profiler module is told of a configuration: what to profile and how, nothing of the
// server, the token or TLS.
module::SessionSettings session_settings(const config::AgentConfig& config);

}  // namespace dormant::agent
