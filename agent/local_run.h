// One-shot (-d N -o DIR) and continuous (-c) profiling of this host, written locally.
#pragma once

#include "config/agent_config.h"

namespace dormant::agent {

// Profiles until the duration ends (or, with -c, until SIGTERM/SIGINT), writing one profile per
// snapshot. A signal during a snapshot ends it early: what was collected is still written.
// Returns the process exit code. SIGINT and SIGTERM must be blocked in every thread.
int run_local_profiling(const config::AgentConfig& config);

}  // namespace dormant::agent
