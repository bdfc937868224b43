// `dormant-agent --enable-heartbeat-server`: the host lock, the state directory, the journal and
// the spool, then the idle daemon (AgentDaemon) until a termination signal.
#pragma once

#include <functional>

#include "agent/config_reload.h"

namespace dormant::agent {

// Runs until SIGTERM/SIGINT (which must be blocked in every thread): then ends the sessions with
// a full teardown, sends what is owed for a few seconds, and returns the exit code. On SIGHUP
// (blocked as well) it reads its configuration again with `reread_config` and applies what it can.
int run_heartbeat_mode(const config::AgentConfig& config,
                       std::function<ConfigReading()> reread_config);

}  // namespace dormant::agent
