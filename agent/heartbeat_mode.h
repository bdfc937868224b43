// `dormant-agent --enable-heartbeat-server`: the idle daemon. One I/O thread polls the control
// server, hands its commands to the Supervisor, delivers completions and profiles; sessions run
// on worker threads of their own only while a command asks for them.
#pragma once

#include "config/agent_config.h"

namespace dormant::agent {

// Runs until SIGTERM/SIGINT (which must be blocked in every thread): then ends the sessions with
// a full teardown, sends what is owed for a few seconds, and returns the exit code.
int run_heartbeat_mode(const config::AgentConfig& config);

}  // namespace dormant::agent
