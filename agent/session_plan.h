// What one session runs with: what the profiler module profiles, how long each snapshot lasts,
// where its profiles go and what their headers say of the agent. Nothing of the server, the token
// or TLS: a session never needs them.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/local_output.h"
#include "config/agent_config.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

struct SessionPlan {
  ProfilingSettings profiling;  // its target's pids are the session's: a process-level stop narrows
  std::chrono::seconds snapshot_every{60};
  bool continuous = false;  // snapshots until stopped; otherwise one

  // The local copy of each profile (-o); empty: none.
  std::string output_dir;
  bool rotating_output = false;
  LocalFormats formats;

  std::string profiling_mode = "cpu";
  // The flags as profile headers show them ("run_arguments"), less the pids: profile_facts adds
  // the profiling's, which a process-level stop may have narrowed.
  nlohmann::json run_arguments = nlohmann::json::object();

  bool profiles_the_whole_host() const { return profiling.target.pids.empty(); }
  bool uses_the_system_profiler() const { return profiling.cpu != CpuProfilers::kNone; }
};

// The plan of a configuration that has passed config::validate.
SessionPlan plan_session(const config::AgentConfig& config);

}  // namespace dormant::agent
