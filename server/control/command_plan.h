// The rules that turn a start or stop request and a host's current command into the host's next
// command. Pure functions: the store reads the current command and writes the outcome.
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

#include <cstddef>
#include <optional>
#include <string>

#include "server/storage/records.h"
#include "server/storage/store.h"

namespace dormant::server::control {

using storage::CommandSpec;
using storage::PidList;
using storage::PlanAction;
using storage::StopLevel;
using storage::TimePoint;

// The host's current command, as far as planning is concerned.
struct CurrentCommand {
  CommandSpec spec;
  storage::CommandStatus status = storage::CommandStatus::kPending;
  std::optional<TimePoint> completed_at;
};

std::optional<CurrentCommand> planning_view(const std::optional<storage::CommandRow>& row);

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

// Requests one command carries out, at most: a start merged into a host's standing one carries
// the new request and up to this many less one of those it replaces.
inline constexpr size_t kMaxRequestsPerCommand = 32;

// The command `change` gives a host for `request_id`, and the plan that reports it. A dry run's
// command has no id.
storage::PlannedHost next_command(const std::string& hostname, const std::string& service_name,
                                  const HostChange& change,
                                  const std::optional<storage::CommandRow>& current,
                                  const std::string& request_id, TimePoint now, bool dry_run);

}  // namespace dormant::server::control
