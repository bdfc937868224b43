// The plan of a start command's session: the agent's own flags, with what the command sets
// (duration, frequency, mode, pids, the perf preset...) laid over them, as gProfiler's
// create_profiler_args does.
#pragma once

#include "agent/session_plan.h"
#include "common/result.h"
#include "config/agent_config.h"
#include "wire/command_config.h"

namespace dormant::agent {

// Fails (with the reason for the command's "failed" completion) when the result is not a
// configuration the agent would accept from its own flags.
Result<SessionPlan> plan_for_command(const config::AgentConfig& agent,
                                     const wire::CommandConfig& command);

}  // namespace dormant::agent
