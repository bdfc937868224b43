#include "server/control/commands.h"

#include <utility>

#include "common/uuid.h"
#include "server/control/command_plan.h"
#include "server/control/request_checks.h"
#include "server/control/subscription_follower.h"

namespace dormant::server::control {

using storage::CommandRow;
using storage::ProfilingRequestRecord;
using storage::SubmitOutcome;

namespace {

// The request as it is recorded, under its own id or a new one.
template <typename Request>
ProfilingRequestRecord record_of(const Request& request, storage::CommandType type) {
  ProfilingRequestRecord record;
  record.request_id = request.request_id.value_or(random_uuid());
  record.service_name = request.service_name;
  record.type = type;
  record.target_hosts = request.target_hosts;
  return record;
}

}  // namespace

Result<SubmitOutcome> Commands::submit_start(const storage::StartRequest& start) {
  auto request = checked_start(start);
  if (!request) return std::move(request).take_error();
  ProfilingRequestRecord record = record_of(*request, storage::CommandType::kStart);
  record.continuous = request->continuous;
  record.duration_s = request->duration_s;
  record.frequency_hz = request->frequency_hz;
  record.mode = request->mode;
  record.additional_args = request->additional_args;

  CommandSpec requested;
  requested.type = storage::CommandType::kStart;
  requested.continuous = request->continuous;
  requested.duration_s = request->duration_s;
  requested.frequency_hz = request->frequency_hz;
  requested.mode = request->mode;
  requested.additional_args = request->additional_args;
  const std::string request_id = record.request_id;  // the record is moved into the store
  const std::string service = record.service_name;
  const bool dry_run = request->dry_run;
  auto plan = [&](const std::string& hostname, const std::optional<PidList>& pids,
                  const std::optional<CommandRow>& current, TimePoint now) {
    CommandSpec for_host = requested;
    for_host.pids = pids;
    HostChange change = plan_start(for_host, planning_view(current), now);
    return next_command(hostname, service, change, current, request_id, now, dry_run);
  };
  storage::RequestWrites writes;
  if (request->subscribe && request->continuous) {
    storage::Subscription subscription;
    subscription.subscription_id = random_uuid();
    subscription.request_id = record.request_id;
    subscription.service_name = record.service_name;
    subscription.spec = *request->subscribe;
    writes.subscribe = std::move(subscription);
  }
  return store_.submit(std::move(record), dry_run, plan, writes);
}

Result<SubmitOutcome> Commands::submit_stop(const storage::StopRequest& stop) {
  auto request = checked_stop(stop);
  if (!request) return std::move(request).take_error();
  ProfilingRequestRecord record = record_of(*request, storage::CommandType::kStop);
  record.stop_level = request->level;

  const std::string request_id = record.request_id;  // the record is moved into the store
  const std::string service = record.service_name;
  const StopLevel level = request->level;
  const bool dry_run = request->dry_run;
  auto plan = [&](const std::string& hostname, const std::optional<PidList>& pids,
                  const std::optional<CommandRow>& current, TimePoint now) {
    HostChange change = plan_stop(level, pids, planning_view(current), now);
    return next_command(hostname, service, change, current, request_id, now, dry_run);
  };
  storage::RequestWrites writes{std::nullopt, request->unsubscribe, request->opt_out};
  return store_.submit(std::move(record), dry_run, plan, writes);
}

Result<storage::HeartbeatAnswer> Commands::record_heartbeat(
    const storage::HostHeartbeat& heartbeat) {
  return store_.record_heartbeat(heartbeat, follow_subscriptions);
}

}  // namespace dormant::server::control
