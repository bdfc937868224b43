// The agent's own report in each heartbeat ("agent_health"): its state, what it holds now against
// its idle baseline, the last teardown audit, each profiler available or not and why, and how its
// deliveries to the server fare.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "agent/profile_spool.h"
#include "agent/resource_audit.h"
#include "agent/supervisor.h"
#include "common/procfs.h"
#include "heartbeat/heartbeat_loop.h"
#include "heartbeat/retrying_sender.h"

namespace dormant::agent {

struct HealthInputs {
  const Supervisor& supervisor;
  const CommandJournal& journal;
  const ResourceAudit& audit;
  const std::optional<AuditReport>& last_audit;
  const ProfileSpool* spool;  // null without -u
  const heartbeat::HeartbeatLoop& heartbeats;
  const heartbeat::RetryingSender& completions;
  const heartbeat::RetryingSender* uploads;  // null without -u
  // USS and PSS as last read (at most once a minute: reading them costs ten times the rest).
  const procfs::MemoryUsage& rollup;
  const nlohmann::json& last_reload;  // SIGHUP's outcome; null before the first
  const nlohmann::json& inventory;    // HeartbeatInventory::health(); null without inventory
};

// What the heartbeat reports of the agent, within what the server takes (kMaxObjectBytes).
nlohmann::json agent_health(const HealthInputs& inputs);

// The server refuses a heartbeat whose agent_health is larger than `max_bytes` as JSON, and with
// it every command: the largest members go until it fits, named in "left_out".
void fit_within(nlohmann::json& health, size_t max_bytes);

}  // namespace dormant::agent
