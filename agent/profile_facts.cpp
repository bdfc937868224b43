#include "agent/profile_facts.h"

#include <chrono>
#include <fstream>

namespace dormant::agent {
namespace {

uint64_t uptime_ms() {
  std::ifstream uptime("/proc/uptime");
  double seconds = 0;
  uptime >> seconds;
  return static_cast<uint64_t>(seconds * 1000);
}

}  // namespace

const AgentStart& agent_start() {
  static const AgentStart start{
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      uptime_ms()};
  return start;
}

module::ProfileFacts profile_facts(const SessionPlan& plan, HostInfo host) {
  module::ProfileFacts facts;
  facts.host = std::move(host);
  facts.agent_version = DORMANT_VERSION;
  facts.spawn_time = agent_start().time;
  facts.spawn_uptime_ms = agent_start().uptime_ms;
  facts.run_arguments = plan.run_arguments;
  facts.run_arguments["pids"] = plan.profiling.target.pids;
  facts.profiling_mode = plan.profiling_mode;
  return facts;
}

}  // namespace dormant::agent
