// `dormant-agent --enable-heartbeat-server`: the host lock, the state directory, the journal and
// the spool, then the idle daemon (AgentDaemon) until a termination signal.
#pragma once

#include "config/agent_config.h"

namespace dormant::agent {

// Runs until SIGTERM/SIGINT (which must be blocked in every thread): then ends the sessions with
// a full teardown, sends what is owed for a few seconds, and returns the exit code.
int run_heartbeat_mode(const config::AgentConfig& config);

}  // namespace dormant::agent
