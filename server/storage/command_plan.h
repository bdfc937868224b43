// The rules that turn a start or stop request and a host's current command into the host's next
// command. Pure functions: the Store reads the current command and writes the outcome.
//
// Performance Studio keeps one command per host and service and means to merge a new start with
// it; its merge branch is unreachable, so there the newest request simply wins. Here:
//   start + standing start  -> one new start: union of pids (a whole-host start absorbs pid
//                              lists), continuous OR-ed, max duration and frequency, the newest
//                              mode, additional_args keys merged with the newest winning;
//   start + anything else   -> the new start replaces it;
//   host stop               -> a host stop replaces everything;
//   process stop of P + standing start with pids S
//                           -> a start for S - P, a host stop when nothing is left, no change
//                              when P and S do not meet;
//   process stop otherwise  -> a process stop for P (the agent stops everything on any stop).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/storage/records.h"

namespace dormant::server::storage {

// What a command asks of one host, in the form later requests merge with.
struct CommandSpec {
  CommandType type = CommandType::kStart;
  std::optional<PidList> pids;          // nullopt: the whole host
  std::optional<StopLevel> stop_level;  // stops, and a start left by a process stop
  // Starts only.
  bool continuous = false;
  int64_t duration_s = 60;
  int64_t frequency_hz = 11;
  ProfilingMode mode = ProfilingMode::kCpu;
  nlohmann::json additional_args = nlohmann::json::object();
};

// What the agent receives (docs/protocol.md, "Heartbeat"): for a start, command_type, continuous,
// duration, frequency, profiling_mode, pids unless whole-host, stop_level when set, and
// additional_args spread flat; for a stop, only stop_level and, at process level, pids.
nlohmann::json build_combined_config(const CommandSpec& spec);

// Keys of combined_config that the store sets and additional_args may not.
bool is_reserved_config_key(std::string_view key);

// The host's current command, as far as planning is concerned.
struct CurrentCommand {
  CommandSpec spec;
  CommandStatus status = CommandStatus::kPending;
  std::optional<TimePoint> completed_at;
};

// A start the host is running or about to run: not yet delivered, delivered and not yet reported,
// or reported started and either continuous or a one-shot whose duration has not yet run out (the
// agent reports completion when it starts a command). Failed and finished starts do not stand.
bool is_standing_start(const CurrentCommand& current, TimePoint now);

struct HostChange {
  PlanAction action = PlanAction::kNew;
  std::optional<CommandSpec> spec;          // the new command; nullopt for kUnchanged
  bool continues_current_requests = false;  // the new command also carries out the current one's
};

// `requested` is a start with normalised pids.
HostChange plan_start(const CommandSpec& requested, const std::optional<CurrentCommand>& current,
                      TimePoint now);
// `pids` is set for kProcess, nullopt for kHost; normalised.
HostChange plan_stop(StopLevel level, const std::optional<PidList>& pids,
                     const std::optional<CurrentCommand>& current, TimePoint now);

// `older` and `newer` are starts.
CommandSpec merge_starts(const CommandSpec& older, const CommandSpec& newer);

}  // namespace dormant::server::storage
