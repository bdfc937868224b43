// What every profile header of a session says of this agent and host: when the agent started, its
// version, the flags it runs with.
#pragma once

#include <cstdint>

#include "agent/session_plan.h"
#include "common/host_info.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

// When the agent process started: the profile header's spawn_time and spawn_uptime_ms.
struct AgentStart {
  double time = 0;  // seconds since the epoch
  uint64_t uptime_ms = 0;
};
// The first call records it; call it early in main().
const AgentStart& agent_start();

module::ProfileFacts profile_facts(const SessionPlan& plan, HostInfo host);

}  // namespace dormant::agent
