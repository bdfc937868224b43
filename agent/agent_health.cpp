#include "agent/agent_health.h"

#include "common/procfs.h"
#include "wire/json_fields.h"
#include "wire/limits.h"

namespace dormant::agent {
namespace {

const char* state_name(Supervisor::State state) {
  switch (state) {
    case Supervisor::State::kIdle:
      return "idle";
    case Supervisor::State::kRunning:
      return "running";
    case Supervisor::State::kStopping:
      return "stopping";
  }
  return "unknown";
}

nlohmann::json delivery(int failures, const std::string& last_error) {
  return {{"consecutive_failures", failures},
          {"last_error", last_error.empty() ? nlohmann::json() : nlohmann::json(last_error)}};
}

// Kept and tried again with backoff while `retrying`: nothing the server has not taken is lost.
nlohmann::json delivery(const heartbeat::RetryingSender& sender) {
  nlohmann::json report = delivery(sender.consecutive_failures(), sender.last_error());
  report["retrying"] = sender.backing_off();
  return report;
}

}  // namespace

void fit_within(nlohmann::json& health, size_t max_bytes) {
  if (wire::json_size(health) <= max_bytes) return;
  // Room for the names of what was left out.
  const size_t room = max_bytes > 1024 ? max_bytes - 1024 : 0;
  nlohmann::json left_out = nlohmann::json::array();
  while (!health.empty() && wire::json_size(health) > room) {
    auto largest = health.begin();
    size_t largest_size = 0;
    for (auto member = health.begin(); member != health.end(); ++member) {
      size_t size = wire::json_size(*member);
      if (size >= largest_size) {
        largest = member;
        largest_size = size;
      }
    }
    left_out.push_back(largest.key());
    health.erase(largest);
  }
  health["left_out"] = std::move(left_out);
}

nlohmann::json agent_health(const HealthInputs& in) {
  nlohmann::json health = {{"state", state_name(in.supervisor.state())},
                           {"running_commands", in.supervisor.running_commands()},
                           {"resumed", in.supervisor.resumed()}};
  // Children are counted by the baseline and the audits only: a count reads every process's
  // stat, most of an idle heartbeat's cost.
  if (auto usage = procfs::resource_usage(0, /*with_children=*/false, /*with_rollup=*/false);
      usage) {
    usage->memory.uss_kb = in.rollup.uss_kb;
    usage->memory.pss_kb = in.rollup.pss_kb;
    health["now"] = IdleFootprint::of(*usage).to_json();
    health["now"].erase("children");
  }
  health["idle_baseline"] =
      in.audit.has_baseline() ? in.audit.baseline().to_json() : nlohmann::json();
  health["last_teardown_audit"] = in.last_audit ? in.last_audit->to_json() : nlohmann::json();
  if (const auto& teardown = in.supervisor.last_teardown()) {
    health["last_teardown"] = {{"took_ms", teardown->took.count()},
                               {"problems", teardown->problems}};
  } else {
    health["last_teardown"] = nullptr;
  }
  nlohmann::json profilers = nlohmann::json::object();
  for (const auto& outcome : in.supervisor.last_outcomes()) {
    profilers[outcome.name] = {{"available", outcome.running}};
    if (!outcome.running) profilers[outcome.name]["reason"] = outcome.reason;
    if (!outcome.facts.is_null()) profilers[outcome.name]["last_snapshot"] = outcome.facts;
  }
  // Nothing is probed while idle: until a session has started, availability is not known.
  health["profilers"] =
      profilers.empty() ? nlohmann::json("not probed yet: no session since start") : profilers;
  health["heartbeat"] = delivery(in.heartbeats.consecutive_failures(), in.heartbeats.last_error());
  health["completions"] = delivery(in.completions);
  health["completions"]["waiting"] = in.journal.owed().size();
  if (in.uploads) health["uploads"] = delivery(*in.uploads);
  health["last_reload"] = in.last_reload;
  if (!in.inventory.is_null()) health["inventory"] = in.inventory;
  if (in.spool) {
    health["spool"] = {{"profiles", in.spool->files()},
                       {"bytes", in.spool->bytes()},
                       {"rejected", in.spool->rejected_files()},
                       {"held_in_memory",
                        {{"profiles", in.spool->held_files()}, {"bytes", in.spool->held_bytes()}}}};
  }
  // Writes under --state-dir that fail now (a full or read-only file system): null when none.
  auto error_or_null = [](const std::string& error) {
    return error.empty() ? nlohmann::json() : nlohmann::json(error);
  };
  health["state_dir"] = {
      {"journal_error", error_or_null(in.journal.write_error())},
      {"spool_error", error_or_null(in.spool ? in.spool->write_error() : std::string())}};
  fit_within(health, wire::kMaxObjectBytes);
  return health;
}

}  // namespace dormant::agent
